/* Compiles examples/seed.json through the installed libfusec.so, runs it
 * on the CPU and checks z = sin^4(x) * y + sin^4(x) against a scalar
 * reference.   consumer SEED_JSON */
#include <fusec/fusec.h>

#include <math.h>
#include <stdio.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s SEED_JSON\n", argv[0]);
    return 2;
  }
  fusec_options *options = NULL;
  fusec_model *model = NULL;
  if (fusec_options_create(&options) != FUSEC_OK ||
      fusec_options_set_target(options, FUSEC_TARGET_CPU) != FUSEC_OK ||
      fusec_compile_file(argv[1], options, &model) != FUSEC_OK) {
    fprintf(stderr, "consumer: %s\n", fusec_last_error());
    return 1;
  }
  fusec_options_destroy(options);
  const int64_t shape[2] = {2, 3};
  float x[6], y[6], z[6];
  for (int i = 0; i < 6; ++i) {
    x[i] = 0.5f * (float)i - 1.0f;
    y[i] = 2.0f - 0.25f * (float)i;
  }
  fusec_tensor inputs[2] = {{FUSEC_F32, 2, shape, NULL, x, FUSEC_DEVICE_CPU},
                            {FUSEC_F32, 2, shape, NULL, y, FUSEC_DEVICE_CPU}};
  fusec_tensor output = {FUSEC_F32, 2, shape, NULL, z, FUSEC_DEVICE_CPU};
  if (fusec_model_run(model, 2, inputs, 1, &output, NULL) != FUSEC_OK) {
    fprintf(stderr, "consumer: %s\n", fusec_last_error());
    return 1;
  }
  fusec_model_destroy(model);
  for (int i = 0; i < 6; ++i) {
    double s = sin(sin(sin(sin((double)x[i]))));
    double expected = s * y[i] + s;
    if (fabs(z[i] - expected) > 1e-5 * (1 + fabs(expected))) {
      fprintf(stderr, "consumer: z[%d] = %.9g, expected %.9g\n", i, z[i],
              expected);
      return 1;
    }
  }
  printf("consumer: fusec %s ran seed.json correctly\n", fusec_version());
  return 0;
}
