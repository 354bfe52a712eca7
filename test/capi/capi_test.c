/* The C API (compiler/include/fusec/fusec.h) from C, on the CPU: every
 * function, its results checked against scalar references, and its error
 * paths (NULL handles, bad files and nodes, wrong tensors at run).
 *
 *   capi_test SOURCE_DIR CACHE_DIR
 */
#include <fusec/fusec.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define CHECK(condition)                                                       \
  do {                                                                         \
    if (!(condition)) {                                                        \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__,         \
              #condition);                                                     \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

/* A call that must succeed; on failure prints fusec's message. */
#define OK(call)                                                               \
  do {                                                                         \
    fusec_status status_ = (call);                                             \
    if (status_ != FUSEC_OK) {                                                 \
      fprintf(stderr, "%s:%d: %s failed (%d): %s\n", __FILE__, __LINE__,       \
              #call, (int)status_, fusec_last_error());                        \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

/* A call that must fail with `expected`, its message containing `text`. */
#define FAILS(call, expected, text)                                            \
  do {                                                                         \
    fusec_status status_ = (call);                                             \
    if (status_ != (expected) || !strstr(fusec_last_error(), (text))) {        \
      fprintf(stderr, "%s:%d: %s gave %d \"%s\", expected %d with \"%s\"\n",   \
              __FILE__, __LINE__, #call, (int)status_, fusec_last_error(),     \
              (int)(expected), (text));                                        \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

static const int64_t kShape[2] = {2, 3};

/* seed.json's z = sin^4(x) * y + sin^4(x), in double. */
static double seedReference(float x, float y) {
  double s = sin(sin(sin(sin((double)x))));
  return s * y + s;
}

static int near(double got, double want, double tolerance) {
  return fabs(got - want) <= tolerance * (1 + fabs(want));
}

static fusec_tensor hostTensor(fusec_dtype dtype, int32_t ndim,
                               const int64_t *shape, void *data) {
  fusec_tensor tensor = {dtype, ndim, shape, NULL, data, FUSEC_DEVICE_CPU};
  return tensor;
}

/* Runs a seed-like model (x, y -> z, f32 2x3) and checks it within
   `tolerance` (relative, near()). */
static void checkSeedWithin(fusec_model *model, double tolerance) {
  float x[6], y[6], z[6];
  for (int i = 0; i < 6; ++i) {
    x[i] = 0.3f * (float)i - 0.7f;
    y[i] = 1.5f - 0.4f * (float)i;
  }
  fusec_tensor inputs[2] = {hostTensor(FUSEC_F32, 2, kShape, x),
                            hostTensor(FUSEC_F32, 2, kShape, y)};
  fusec_tensor output = hostTensor(FUSEC_F32, 2, kShape, z);
  OK(fusec_model_run(model, 2, inputs, 1, &output, NULL));
  for (int i = 0; i < 6; ++i)
    CHECK(near(z[i], seedReference(x[i], y[i]), tolerance));
}

static void checkSeed(fusec_model *model) { checkSeedWithin(model, 1e-5); }

static void testLibrary(void) {
  char expected[32];
  snprintf(expected, sizeof expected, "%d.%d.%d", FUSEC_VERSION_MAJOR,
           FUSEC_VERSION_MINOR, FUSEC_VERSION_PATCH);
  CHECK(strcmp(fusec_version(), expected) == 0);
  CHECK(strcmp(fusec_dtype_name(FUSEC_BF16), "bf16") == 0);
  CHECK(strcmp(fusec_dtype_name(FUSEC_BOOL), "i1") == 0);
  CHECK(fusec_dtype_name((fusec_dtype)99) == NULL);
  CHECK(fusec_dtype_size(FUSEC_F64) == 8 && fusec_dtype_size(FUSEC_BOOL) == 1 &&
        fusec_dtype_size((fusec_dtype)99) == 0);
  fusec_dtype dtype;
  OK(fusec_dtype_from_name("f16", &dtype));
  CHECK(dtype == FUSEC_F16);
  OK(fusec_dtype_from_name("bool", &dtype));
  CHECK(dtype == FUSEC_BOOL);
  FAILS(fusec_dtype_from_name("f17", &dtype), FUSEC_ERROR_INVALID_ARGUMENT,
        "unknown dtype 'f17'");
  FAILS(fusec_dtype_from_name(NULL, &dtype), FUSEC_ERROR_INVALID_ARGUMENT,
        "NULL");
  int available = fusec_cuda_available();
  CHECK(available == 0 || available == 1);
}

static int remarks = 0;
static void countRemark(const char *remark, void *counter) {
  CHECK(strstr(remark, "remark") != NULL);
  ++*(int *)counter;
}

static fusec_options *cpuOptions(const char *cacheDir) {
  fusec_options *options = NULL;
  OK(fusec_options_create(&options));
  OK(fusec_options_set_target(options, FUSEC_TARGET_CPU));
  OK(fusec_options_set_cache_dir(options, cacheDir));
  return options;
}

static void testOptions(const char *cacheDir) {
  fusec_options *options = cpuOptions(cacheDir);
  OK(fusec_options_set_gpu_arch(options, "sm_90a"));
  OK(fusec_options_set_gpu_arch(options, NULL));
  OK(fusec_options_set_flag(options, FUSEC_FLAG_FAST_MATH, 1));
  OK(fusec_options_set_flag(options, FUSEC_FLAG_TF32, 1));
  OK(fusec_options_set_flag(options, FUSEC_FLAG_FUSE, 1));
  OK(fusec_options_set_flag(options, FUSEC_FLAG_ATTENTION, 1));
  OK(fusec_options_set_flag(options, FUSEC_FLAG_CUDA_GRAPHS, 0));
  OK(fusec_options_set_flag(options, FUSEC_FLAG_KERNEL_OVERLAP, 0));
  FAILS(fusec_options_set_flag(options, (fusec_flag)17, 1),
        FUSEC_ERROR_INVALID_ARGUMENT, "not a fusec_flag");
  OK(fusec_options_set_input_shape(options, "x", 2, kShape));
  OK(fusec_options_set_remark_callback(options, countRemark, &remarks));
  FAILS(fusec_options_set_target(options, (fusec_target)7),
        FUSEC_ERROR_INVALID_ARGUMENT, "not a fusec_target");
  FAILS(fusec_options_set_gpu_arch(options, "90"), FUSEC_ERROR_INVALID_ARGUMENT,
        "sm_XY");
  int64_t negative[1] = {-2};
  FAILS(fusec_options_set_input_shape(options, "x", 1, negative),
        FUSEC_ERROR_INVALID_ARGUMENT, "negative");
  FAILS(fusec_options_set_flag(NULL, FUSEC_FLAG_FUSE, 1),
        FUSEC_ERROR_INVALID_ARGUMENT, "the options is NULL");
  OK(fusec_options_set_precision(options, FUSEC_BF16));
  OK(fusec_options_set_precision(options, FUSEC_F16));
  OK(fusec_options_set_precision(options, FUSEC_F32));
  FAILS(fusec_options_set_precision(options, FUSEC_I8),
        FUSEC_ERROR_INVALID_ARGUMENT, "must be bf16, f16 or f32 (off), got i8");
  OK(fusec_options_keep_f32(options, "head"));
  FAILS(fusec_options_keep_f32(options, NULL), FUSEC_ERROR_INVALID_ARGUMENT,
        "the node name is NULL");
  fusec_options_destroy(options);
  fusec_options_destroy(NULL);
}

/* --precision through the C API: the seed model in bf16 keeps its f32
   inputs and outputs, within bf16's rounding of the f32 result; a node
   --keep-f32 names must exist. */
static void testPrecision(const char *sourceDir, const char *cacheDir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/examples/seed.json", sourceDir);
  fusec_options *options = cpuOptions(cacheDir);
  OK(fusec_options_set_precision(options, FUSEC_BF16));
  fusec_model *model = NULL;
  OK(fusec_compile_file(path, options, &model));
  if (model) {
    fusec_dtype dtype;
    OK(fusec_model_output(model, 0, NULL, &dtype, NULL, NULL));
    CHECK(dtype == FUSEC_F32);
    /* bf16 keeps 8 significant bits; the seed rounds after each op. */
    checkSeedWithin(model, 3e-2);
    fusec_model_destroy(model);
  }
  OK(fusec_options_keep_f32(options, "no_such_node"));
  FAILS(fusec_compile_file(path, options, &model), FUSEC_ERROR,
        "no node named 'no_such_node'");
  fusec_options_destroy(options);
}

static void testFileModel(const char *sourceDir, const char *cacheDir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/examples/seed.json", sourceDir);
  fusec_options *options = cpuOptions(cacheDir);
  fusec_model *model = NULL;
  OK(fusec_compile_file(path, options, &model));
  fusec_options_destroy(options); /* the model does not need them */
  if (!model)
    return;

  fusec_target target;
  OK(fusec_model_target(model, &target));
  CHECK(target == FUSEC_TARGET_CPU);
  const char *name = NULL;
  OK(fusec_model_name(model, &name));
  CHECK(name && strcmp(name, "seed") == 0);
  size_t inputs = 0, outputs = 0;
  OK(fusec_model_input_count(model, &inputs));
  OK(fusec_model_output_count(model, &outputs));
  CHECK(inputs == 2 && outputs == 1);
  fusec_dtype dtype;
  int32_t ndim = 0;
  const int64_t *shape = NULL;
  OK(fusec_model_input(model, 1, &name, &dtype, &ndim, &shape));
  CHECK(strcmp(name, "y") == 0 && dtype == FUSEC_F32 && ndim == 2 &&
        shape[0] == 2 && shape[1] == 3);
  OK(fusec_model_output(model, 0, &name, NULL, NULL, NULL));
  CHECK(strcmp(name, "z") == 0);
  FAILS(fusec_model_input(model, 2, &name, NULL, NULL, NULL),
        FUSEC_ERROR_INVALID_ARGUMENT, "has 2 inputs");
  /* z = sin^4(x) * y + sin^4(x) updates no input in place. */
  int64_t updated = 0;
  OK(fusec_model_output_updates_input(model, 0, &updated));
  CHECK(updated == -1);
  FAILS(fusec_model_output_updates_input(model, 1, &updated),
        FUSEC_ERROR_INVALID_ARGUMENT, "has 1 outputs");

  checkSeed(model);

  /* Strides: the contiguous ones are accepted, others rejected. */
  float x[6] = {0}, y[6] = {0}, z[6];
  int64_t contiguous[2] = {3, 1}, transposed[2] = {1, 2};
  fusec_tensor in[2] = {hostTensor(FUSEC_F32, 2, kShape, x),
                        hostTensor(FUSEC_F32, 2, kShape, y)};
  fusec_tensor out = hostTensor(FUSEC_F32, 2, kShape, z);
  in[0].strides = contiguous;
  OK(fusec_model_run(model, 2, in, 1, &out, NULL));
  in[0].strides = transposed;
  FAILS(fusec_model_run(model, 2, in, 1, &out, NULL), FUSEC_ERROR,
        "input 'x' is not contiguous");
  in[0].strides = NULL;

  /* Wrong tensors at run. */
  double wide[6];
  in[1] = hostTensor(FUSEC_F64, 2, kShape, wide);
  FAILS(fusec_model_run(model, 2, in, 1, &out, NULL), FUSEC_ERROR,
        "input 'y' is f32[2, 3] but the tensor given is f64[2, 3]");
  int64_t flat[1] = {6};
  in[1] = hostTensor(FUSEC_F32, 1, flat, y);
  FAILS(fusec_model_run(model, 2, in, 1, &out, NULL), FUSEC_ERROR,
        "input 'y' is f32[2, 3] but the tensor given is f32[6]");
  in[1] = hostTensor(FUSEC_F32, 2, kShape, y);
  out = hostTensor(FUSEC_F16, 2, kShape, z);
  FAILS(fusec_model_run(model, 2, in, 1, &out, NULL), FUSEC_ERROR,
        "output 'z' is f32[2, 3]");
  out = hostTensor(FUSEC_F32, 2, kShape, z);
  FAILS(fusec_model_run(model, 1, in, 1, &out, NULL), FUSEC_ERROR,
        "takes 2 inputs and 1 outputs but got 1 and 1");
  in[1].device = FUSEC_DEVICE_CUDA;
  FAILS(fusec_model_run(model, 2, in, 1, &out, NULL), FUSEC_ERROR,
        "input 'y' is on cuda but the run's first tensor is on cpu");
  in[0].device = FUSEC_DEVICE_CUDA;
  out.device = FUSEC_DEVICE_CUDA;
  FAILS(fusec_model_run(model, 2, in, 1, &out, NULL), FUSEC_ERROR,
        "runs on the cpu: only CUDA models run on device tensors");
  in[0].device = in[1].device = out.device = FUSEC_DEVICE_CPU;
  in[0].data = NULL;
  FAILS(fusec_model_run(model, 2, in, 1, &out, NULL),
        FUSEC_ERROR_INVALID_ARGUMENT, "input 'x' has no data");
  OK(fusec_model_synchronize(model));

  /* Kernels: seed fuses into one kernel of its six ops. */
  size_t kernels = 0;
  OK(fusec_model_kernel_count(model, &kernels));
  CHECK(kernels == 1);
  size_t opCount = 0;
  const char *const *ops = NULL;
  const char *source = NULL;
  OK(fusec_model_kernel(model, 0, &name, &opCount, &ops, &source));
  CHECK(opCount == 6 && strcmp(ops[0], "sin") == 0 &&
        strcmp(ops[5], "add") == 0);
  CHECK(strstr(source, name) != NULL);
  FAILS(fusec_model_kernel(model, 1, &name, NULL, NULL, NULL),
        FUSEC_ERROR_INVALID_ARGUMENT, "has 1 kernels");

  /* Profile: the CLI's table and JSON. */
  const char *report = NULL;
  OK(fusec_model_profile(model, 3, FUSEC_PROFILE_TEXT, &report));
  CHECK(report && strstr(report, name) != NULL);
  OK(fusec_model_profile(model, 3, FUSEC_PROFILE_JSON, &report));
  CHECK(report && report[0] == '{' && strstr(report, "\"steps\""));
  FAILS(fusec_model_profile(model, 0, FUSEC_PROFILE_TEXT, &report),
        FUSEC_ERROR_INVALID_ARGUMENT, "at least one run");
  checkSeed(model); /* still runs after profiling */

  /* A package: saved, loaded again (no compiler), runs the same. */
  char package[4096];
  snprintf(package, sizeof package, "%s-capi-seed.fusec", cacheDir);
  OK(fusec_model_save(model, package));
  fusec_model_destroy(model);
  fusec_model *loaded = NULL;
  OK(fusec_model_load(package, &loaded));
  if (loaded) {
    OK(fusec_model_name(loaded, &name));
    CHECK(name && strcmp(name, "seed") == 0);
    checkSeed(loaded);
    fusec_model_destroy(loaded);
  }
  remove(package);
  FAILS(fusec_model_load(path, &loaded), FUSEC_ERROR, "not a fusec package");
  CHECK(loaded == NULL);
  FAILS(fusec_model_load(package, &loaded), FUSEC_ERROR, "cannot open");
  FAILS(fusec_model_save(NULL, package), FUSEC_ERROR_INVALID_ARGUMENT, "model");
}

static char *readFile(const char *path, size_t *size) {
  FILE *file = fopen(path, "rb");
  if (!file)
    return NULL;
  fseek(file, 0, SEEK_END);
  long length = ftell(file);
  fseek(file, 0, SEEK_SET);
  char *data = malloc((size_t)length + 1);
  *size = fread(data, 1, (size_t)length, file);
  data[*size] = '\0';
  fclose(file);
  return data;
}

/* Compiles the seed model in file `relative` from memory and checks it. */
static void checkSeedBuffer(const char *sourceDir, const char *relative,
                            fusec_format format, fusec_options *options) {
  char path[4096];
  size_t size = 0;
  snprintf(path, sizeof path, "%s/%s", sourceDir, relative);
  char *text = readFile(path, &size);
  CHECK(text != NULL);
  fusec_model *model = NULL;
  OK(fusec_compile_buffer(text, size, format, relative, options, &model));
  if (model)
    checkSeed(model);
  fusec_model_destroy(model);
  free(text);
}

static void testBuffers(const char *sourceDir, const char *cacheDir) {
  fusec_options *options = cpuOptions(cacheDir);
  char path[4096];
  size_t size = 0;
  fusec_model *model = NULL;

  checkSeedBuffer(sourceDir, "examples/seed.json", FUSEC_FORMAT_JSON, options);
  checkSeedBuffer(sourceDir, "test/fuzz/corpus/mlir/model-seed.mlir",
                  FUSEC_FORMAT_MLIR, options);

  /* ONNX bytes: the ONNX suite's Sqrt. */
  snprintf(path, sizeof path, "%s/test/fuzz/corpus/onnx/test_sqrt.onnx",
           sourceDir);
  char *onnx = readFile(path, &size);
  CHECK(onnx != NULL);
  model = NULL;
  OK(fusec_compile_buffer(onnx, size, FUSEC_FORMAT_ONNX, "sqrt.onnx", options,
                          &model));
  if (model) {
    fusec_dtype dtype;
    int32_t ndim;
    const int64_t *shape;
    OK(fusec_model_input(model, 0, NULL, &dtype, &ndim, &shape));
    int64_t count = 1;
    for (int i = 0; i < ndim; ++i)
      count *= shape[i];
    CHECK(dtype == FUSEC_F32 && count > 0 && count < 10000);
    float x[10000], y[10000];
    for (int64_t i = 0; i < count; ++i)
      x[i] = 0.25f * (float)i;
    fusec_tensor in = hostTensor(FUSEC_F32, ndim, shape, x);
    fusec_tensor out = hostTensor(FUSEC_F32, ndim, shape, y);
    OK(fusec_model_run(model, 1, &in, 1, &out, NULL));
    for (int64_t i = 0; i < count; ++i)
      CHECK(near(y[i], sqrt(0.25 * (double)i), 1e-6));
  }
  fusec_model_destroy(model);
  free(onnx);

  /* ONNX text, with a symbolic dim given its size by the options. */
  const char *text = "<ir_version: 8, opset_import: [\"\" : 17]>\n"
                     "g (float[N, 3] x) => (float[N, 3] y) {\n"
                     "  y = Neg(x)\n"
                     "}\n";
  OK(fusec_options_set_input_shape(options, "x", 2, kShape));
  model = NULL;
  OK(fusec_compile_buffer(text, strlen(text), FUSEC_FORMAT_ONNX_TEXT, NULL,
                          options, &model));
  if (model) {
    float x[6] = {1, -2, 3, -4, 5, -6}, y[6];
    fusec_tensor in = hostTensor(FUSEC_F32, 2, kShape, x);
    fusec_tensor out = hostTensor(FUSEC_F32, 2, kShape, y);
    OK(fusec_model_run(model, 1, &in, 1, &out, NULL));
    for (int i = 0; i < 6; ++i)
      CHECK(y[i] == -x[i]);
  }
  fusec_model_destroy(model);

  /* Errors name the file and the node. */
  const char *badNode =
      "{\"fusec_graph\": 1, \"inputs\": [{\"name\": \"x\", \"dtype\": "
      "\"f32\", \"shape\": [2]}], \"nodes\": [{\"name\": \"bad\", \"op\": "
      "\"frobnicate\", \"inputs\": [\"x\"], \"outputs\": [\"y\"]}], "
      "\"outputs\": [\"y\"]}";
  model = (fusec_model *)&model; /* overwritten with NULL on failure */
  FAILS(fusec_compile_buffer(badNode, strlen(badNode), FUSEC_FORMAT_JSON,
                             "broken.json", options, &model),
        FUSEC_ERROR, "broken.json: node 'bad': error:");
  CHECK(model == NULL);
  FAILS(fusec_compile_buffer("{", 1, FUSEC_FORMAT_JSON, NULL, options, &model),
        FUSEC_ERROR, "<memory>: error: malformed JSON");
  /* A length-delimited field cut short: not a protobuf. */
  FAILS(fusec_compile_buffer("\x0a\x10"
                             "ab",
                             4, FUSEC_FORMAT_ONNX, "junk.onnx", options,
                             &model),
        FUSEC_ERROR, "junk.onnx: error: not a valid ONNX model");
  FAILS(fusec_compile_buffer("x", 1, (fusec_format)9, NULL, options, &model),
        FUSEC_ERROR_INVALID_ARGUMENT, "not a fusec_format");
  FAILS(fusec_compile_file("/nonexistent/model.json", options, &model),
        FUSEC_ERROR, "/nonexistent/model.json: error: cannot open");
  FAILS(fusec_compile_file("model.txt", options, &model), FUSEC_ERROR,
        "model.txt: error: unknown model format");
  FAILS(fusec_compile_file(NULL, options, &model), FUSEC_ERROR_INVALID_ARGUMENT,
        "the path is NULL");
  FAILS(fusec_compile_file("x.json", options, NULL),
        FUSEC_ERROR_INVALID_ARGUMENT, "the model is NULL");
  fusec_options_destroy(options);
}

static void testGraph(const char *cacheDir) {
  fusec_graph *graph = NULL;
  OK(fusec_graph_create("built", &graph));
  const char *x = NULL, *w = NULL, *two = NULL, *value = NULL;
  OK(fusec_graph_input(graph, "x", FUSEC_F32, 2, kShape, &x));
  float weights[6] = {1, 2, 3, 4, 5, 6};
  fusec_tensor data = hostTensor(FUSEC_F32, 2, kShape, weights);
  OK(fusec_graph_constant(graph, "w", &data, &w));
  weights[0] = 100; /* the graph holds a copy */
  OK(fusec_graph_scalar(graph, 2.0, FUSEC_F32, &two));

  /* y = leaky_relu(x * w, alpha=0.5) * 2; s = reduce_sum(y, axes=[1]);
     c = cast(s, i32); the outputs: y, c. */
  const char *mulInputs[2] = {x, w};
  OK(fusec_graph_op(graph, "mul", 2, mulInputs, 0, NULL, &value));
  fusec_attr alpha = {"alpha", FUSEC_ATTR_FLOAT, 0, 0.5, NULL, NULL, 0};
  OK(fusec_graph_op(graph, "leaky_relu", 1, &value, 1, &alpha, &value));
  const char *scaleInputs[2] = {value, two};
  const char *y = NULL;
  OK(fusec_graph_op(graph, "mul", 2, scaleInputs, 0, NULL, &y));
  int64_t axes[1] = {1};
  fusec_attr reduce[2] = {{"axes", FUSEC_ATTR_INTS, 0, 0, NULL, axes, 1},
                          {"keepdims", FUSEC_ATTR_INT, 0, 0, NULL, NULL, 0}};
  OK(fusec_graph_op(graph, "reduce_sum", 1, &y, 2, reduce, &value));
  fusec_attr castTo = {"dtype", FUSEC_ATTR_STRING, 0, 0, "i32", NULL, 0};
  const char *c = NULL;
  OK(fusec_graph_op(graph, "cast", 1, &value, 1, &castTo, &c));
  OK(fusec_graph_output(graph, y));
  OK(fusec_graph_output(graph, c));

  fusec_attr badKind = {"alpha", (fusec_attr_kind)9, 0, 0, NULL, NULL, 0};
  FAILS(fusec_graph_op(graph, "elu", 1, &x, 1, &badKind, &value),
        FUSEC_ERROR_INVALID_ARGUMENT, "no valid kind");
  FAILS(fusec_graph_op(NULL, "sin", 1, &x, 0, NULL, &value),
        FUSEC_ERROR_INVALID_ARGUMENT, "the graph is NULL");
  FAILS(fusec_graph_input(graph, "z", FUSEC_F32, 2, NULL, &value),
        FUSEC_ERROR_INVALID_ARGUMENT, "shape NULL");

  fusec_options *options = cpuOptions(cacheDir);
  fusec_model *model = NULL;
  OK(fusec_compile_graph(graph, options, &model));
  fusec_options_destroy(options);
  if (model) {
    float in[6] = {-1, 2, -3, 4, -5, 6}, out[6];
    int32_t sums[2];
    int64_t rows[1] = {2};
    fusec_tensor input = hostTensor(FUSEC_F32, 2, kShape, in);
    fusec_tensor outputs[2] = {hostTensor(FUSEC_F32, 2, kShape, out),
                               hostTensor(FUSEC_I32, 1, rows, sums)};
    OK(fusec_model_run(model, 1, &input, 2, outputs, NULL));
    const float w0[6] = {1, 2, 3, 4, 5, 6};
    double rowSums[2] = {0, 0};
    for (int i = 0; i < 6; ++i) {
      double product = (double)in[i] * w0[i];
      double expected = (product < 0 ? 0.5 * product : product) * 2;
      CHECK(near(out[i], expected, 1e-6));
      rowSums[i / 3] += expected;
    }
    CHECK(sums[0] == (int32_t)rowSums[0] && sums[1] == (int32_t)rowSums[1]);
  }
  fusec_model_destroy(model);

  /* A graph error names the node the builder made. */
  OK(fusec_graph_op(graph, "matmul", 1, &x, 0, NULL, &value));
  OK(fusec_graph_output(graph, value));
  options = cpuOptions(cacheDir);
  FAILS(fusec_compile_graph(graph, options, &model), FUSEC_ERROR,
        "node 'matmul_");
  fusec_options_destroy(options);
  fusec_graph_destroy(graph);
  fusec_graph_destroy(NULL);
}

static void testNullHandles(void) {
  size_t count;
  fusec_model *model = NULL;
  FAILS(fusec_model_run(NULL, 0, NULL, 0, NULL, NULL),
        FUSEC_ERROR_INVALID_ARGUMENT, "the model is NULL");
  FAILS(fusec_model_input_count(NULL, &count), FUSEC_ERROR_INVALID_ARGUMENT,
        "the model is NULL");
  FAILS(fusec_model_kernel_count(NULL, &count), FUSEC_ERROR_INVALID_ARGUMENT,
        "the model is NULL");
  FAILS(fusec_model_synchronize(NULL), FUSEC_ERROR_INVALID_ARGUMENT,
        "the model is NULL");
  FAILS(fusec_compile_graph(NULL, NULL, &model), FUSEC_ERROR_INVALID_ARGUMENT,
        "the graph is NULL");
  fusec_model_destroy(NULL);
}

static void testCache(const char *cacheDir) {
  char directory[4096];
  size_t length = 0;
  OK(fusec_cache_directory(cacheDir, directory, sizeof directory, &length));
  CHECK(strcmp(directory, cacheDir) == 0 && length == strlen(cacheDir));
  char cut[4];
  OK(fusec_cache_directory(cacheDir, cut, sizeof cut, NULL));
  CHECK(strlen(cut) == 3 && strncmp(cut, cacheDir, 3) == 0);
  OK(fusec_cache_directory(NULL, NULL, 0, &length));
  CHECK(length > 0);
  char cleared[4096];
  snprintf(cleared, sizeof cleared, "%s-capi-clear", cacheDir);
  OK(fusec_cache_clear(cleared));
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s SOURCE_DIR CACHE_DIR\n", argv[0]);
    return 2;
  }
  testLibrary();
  testOptions(argv[2]);
  testFileModel(argv[1], argv[2]);
  testPrecision(argv[1], argv[2]);
  testBuffers(argv[1], argv[2]);
  testGraph(argv[2]);
  testNullHandles();
  testCache(argv[2]);
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("capi_test: all checks passed\n");
  return 0;
}
