/*===- fusec.h - The fusec C API -----------------------------------*- C -*-===
 *
 * A stable C interface to fusec, carried by libfusec.so (docs/c-api.md):
 *
 *   fusec_model *model;
 *   if (fusec_compile_file("seed.json", NULL, &model) != FUSEC_OK)
 *     fprintf(stderr, "%s\n", fusec_last_error());
 *   fusec_tensor in = {FUSEC_F32, 2, shape, NULL, x, FUSEC_DEVICE_CPU};
 *   fusec_tensor out = {FUSEC_F32, 2, shape, NULL, y, FUSEC_DEVICE_CPU};
 *   fusec_model_run(model, 1, &in, 1, &out, NULL);
 *   fusec_model_destroy(model);
 *
 * Handles are opaque. Every function that can fail returns a fusec_status;
 * on failure fusec_last_error() (per thread) has the message, naming the
 * file and node where there is one ("model.json: node 'n3': error: ...").
 * Strings a function hands back belong to the handle it was asked about and
 * stay valid until that handle is destroyed (or, for a profile, until the
 * next profile of that model). A model may be used from one thread at a
 * time; distinct models from distinct threads.
 *
 *===----------------------------------------------------------------------===*/
#ifndef FUSEC_FUSEC_H
#define FUSEC_FUSEC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FUSEC_API __attribute__((visibility("default")))

/* The version of this header; fusec_version() gives the library's. */
#define FUSEC_VERSION_MAJOR 0
#define FUSEC_VERSION_MINOR 1
#define FUSEC_VERSION_PATCH 0

typedef enum fusec_status {
  FUSEC_OK = 0,
  /* A model, option or tensor fusec rejects (bad file, bad node, wrong
     dtype or shape at run, no GPU for a CUDA model, ...). */
  FUSEC_ERROR = 1,
  /* A NULL handle or pointer, or a value outside its enum. */
  FUSEC_ERROR_INVALID_ARGUMENT = 2,
  /* Host memory ran out. */
  FUSEC_ERROR_OUT_OF_MEMORY = 3,
  /* A failure inside fusec that is not the caller's (a bug: report it). */
  FUSEC_ERROR_INTERNAL = 4
} fusec_status;

/* Element types, in fusec's names (fusec_dtype_name). */
typedef enum fusec_dtype {
  FUSEC_F64 = 0,
  FUSEC_F32 = 1,
  FUSEC_F16 = 2,
  FUSEC_BF16 = 3, /* raw 16-bit patterns */
  FUSEC_I8 = 4,
  FUSEC_I32 = 5,
  FUSEC_I64 = 6,
  FUSEC_BOOL = 7, /* "i1": one byte, 0 or 1 */
  FUSEC_I16 = 8,
  FUSEC_U8 = 9,
  FUSEC_U16 = 10,
  FUSEC_U32 = 11,
  FUSEC_U64 = 12,
  FUSEC_F8E4M3FN = 13,
  FUSEC_F8E4M3FNUZ = 14,
  FUSEC_F8E5M2 = 15,
  FUSEC_F8E5M2FNUZ = 16,
  FUSEC_F4E2M1FN = 17, /* one value per byte */
  FUSEC_F8E8M0FNU = 18,
  FUSEC_I4 = 19, /* one value per byte */
  FUSEC_U4 = 20,
  FUSEC_I2 = 21,
  FUSEC_U2 = 22
} fusec_dtype;

typedef enum fusec_device {
  FUSEC_DEVICE_CPU = 0, /* host memory */
  FUSEC_DEVICE_CUDA = 1 /* memory of the GPU fusec runs on (device 0) */
} fusec_device;

typedef enum fusec_target {
  FUSEC_TARGET_AUTO = 0, /* cuda when a usable GPU is present, else cpu */
  FUSEC_TARGET_CPU = 1,
  FUSEC_TARGET_CUDA = 2
} fusec_target;

/* A tensor the caller owns: dense, row-major. `strides` (in elements, one
   per dim) may be NULL for contiguous; strides that are not the contiguous
   ones are rejected. A rank-0 tensor has ndim 0 and may have shape NULL. */
typedef struct fusec_tensor {
  fusec_dtype dtype;
  int32_t ndim;
  const int64_t *shape;
  const int64_t *strides;
  void *data; /* host pointer, or a CUdeviceptr for FUSEC_DEVICE_CUDA */
  fusec_device device;
} fusec_tensor;

typedef struct fusec_options fusec_options;
typedef struct fusec_graph fusec_graph;
typedef struct fusec_model fusec_model;

/* ---- Library ----------------------------------------------------------- */

/* "MAJOR.MINOR.PATCH" of the library. */
FUSEC_API const char *fusec_version(void);
/* The message of this thread's last failed call ("" if none). */
FUSEC_API const char *fusec_last_error(void);
/* fusec's name of a dtype ("f32", "bf16", "i1", ...); NULL if out of range. */
FUSEC_API const char *fusec_dtype_name(fusec_dtype dtype);
/* The dtype named `name` (fusec's names; "bool" is accepted for "i1"). */
FUSEC_API fusec_status fusec_dtype_from_name(const char *name,
                                             fusec_dtype *dtype);
/* Bytes of one element (1 for the 4- and 2-bit dtypes); 0 if out of range. */
FUSEC_API size_t fusec_dtype_size(fusec_dtype dtype);
/* Whether a usable GPU is present (the cuda target can run here). */
FUSEC_API int fusec_cuda_available(void);

/* ---- Options (all optional: NULL options means the defaults) ----------- */

/* New options holding the defaults; fusec_options_destroy frees them (a
   compiled model does not need them). */
FUSEC_API fusec_status fusec_options_create(fusec_options **options);
FUSEC_API void fusec_options_destroy(fusec_options *options);
/* The target to compile for. Default FUSEC_TARGET_AUTO. */
FUSEC_API fusec_status fusec_options_set_target(fusec_options *options,
                                                fusec_target target);
/* CUDA: the NVRTC architecture ("sm_90a"); NULL or "" for the device's. */
FUSEC_API fusec_status fusec_options_set_gpu_arch(fusec_options *options,
                                                  const char *arch);
typedef enum fusec_flag {
  /* CUDA: fast intrinsics (__sinf, __expf, ...). Default off. */
  FUSEC_FLAG_FAST_MATH = 0,
  /* CUDA: f32 matmuls on TF32 tensor cores. Default off. */
  FUSEC_FLAG_TF32 = 1,
  /* Fusion; off: one kernel per op (the eager-like baseline). Default on. */
  FUSEC_FLAG_FUSE = 2,
  /* Fused attention kernels; off: matmul, softmax, matmul. Default on. */
  FUSEC_FLAG_ATTENTION = 3,
  /* CUDA: replay each run as one captured CUDA graph. Default on. */
  FUSEC_FLAG_CUDA_GRAPHS = 4,
  /* CUDA: let a kernel start while its predecessor ends. Default on. */
  FUSEC_FLAG_KERNEL_OVERLAP = 5
} fusec_flag;
/* Turns a boolean option on (`enabled` non-zero) or off. */
FUSEC_API fusec_status fusec_options_set_flag(fusec_options *options,
                                              fusec_flag flag, int enabled);
/* ONNX: the shape of graph input `name`, whose dims are symbolic. */
FUSEC_API fusec_status fusec_options_set_input_shape(fusec_options *options,
                                                     const char *name,
                                                     int32_t ndim,
                                                     const int64_t *shape);
/* ONNX and JSON: keep the named dim `name` (a dim_param, a JSON named dim)
   symbolic for every size from `min` to `max`: the model compiles once and
   each run binds the size from its inputs (docs/dynamic-shapes.md).
   `min` == `max` fixes the dim in every input naming it. */
FUSEC_API fusec_status fusec_options_set_dim_range(fusec_options *options,
                                                   const char *name,
                                                   int64_t min, int64_t max);
/* Declares every size of dim `name` (given a range first) a multiple of
   `multiple`: kernels may rely on it (vector widths, aligned rows), and a
   run at another size is an error naming the dim. */
FUSEC_API fusec_status fusec_options_set_dim_multiple(fusec_options *options,
                                                      const char *name,
                                                      int64_t multiple);
/* The kernel cache directory; NULL or "" for the default
   ($FUSEC_CACHE_DIR, else $XDG_CACHE_HOME/fusec, else ~/.cache/fusec). */
FUSEC_API fusec_status fusec_options_set_cache_dir(fusec_options *options,
                                                   const char *dir);
/* Receives each fusion remark ("FILE: node 'N': remark: ...") during a
   compile with these options, on the compiling thread; NULL drops them. */
typedef void (*fusec_remark_callback)(const char *remark, void *user_data);
FUSEC_API fusec_status fusec_options_set_remark_callback(
    fusec_options *options, fusec_remark_callback callback, void *user_data);

/* Runs the model's f32 tensors in `dtype`, FUSEC_BF16 or
   FUSEC_F16 (matmuls accumulate in f32; reductions and norm statistics
   stay f32 inside their kernels; inputs and outputs keep their dtypes:
   docs/precision.md). FUSEC_F32 turns it off (the default). */
FUSEC_API fusec_status fusec_options_set_precision(fusec_options *options,
                                                   fusec_dtype dtype);
/* With a precision set: the f32 tensors of the node named `node` stay f32
   (call once per node). */
FUSEC_API fusec_status fusec_options_keep_f32(fusec_options *options,
                                              const char *node);

/* ---- Graphs built in code (the C++ GraphBuilder) ---------------------- */

/* Ops are fuse mnemonics with ONNX attribute names (docs/json-format.md).
   Each builder call hands back the name of the value it defines, owned by
   the graph. */
typedef enum fusec_attr_kind {
  FUSEC_ATTR_INT = 0,
  FUSEC_ATTR_FLOAT = 1,
  FUSEC_ATTR_STRING = 2,
  FUSEC_ATTR_INTS = 3
} fusec_attr_kind;

typedef struct fusec_attr {
  const char *name;
  fusec_attr_kind kind;
  int64_t int_value;
  double float_value;
  const char *string_value;
  const int64_t *ints; /* FUSEC_ATTR_INTS: `count` values */
  size_t count;
} fusec_attr;

/* An empty graph named `name` (NULL: "main"); fusec_graph_destroy frees it
   and the value names it handed out. */
FUSEC_API fusec_status fusec_graph_create(const char *name,
                                          fusec_graph **graph);
FUSEC_API void fusec_graph_destroy(fusec_graph *graph);
/* A graph input of static shape. */
FUSEC_API fusec_status fusec_graph_input(fusec_graph *graph, const char *name,
                                         fusec_dtype dtype, int32_t ndim,
                                         const int64_t *shape,
                                         const char **value);
/* A constant; its host data is copied (contiguous only). */
FUSEC_API fusec_status fusec_graph_constant(fusec_graph *graph,
                                            const char *name,
                                            const fusec_tensor *data,
                                            const char **value);
/* A rank-0 constant, broadcast wherever it is used. */
FUSEC_API fusec_status fusec_graph_scalar(fusec_graph *graph, double number,
                                          fusec_dtype dtype,
                                          const char **value);
/* Op `op` of the values `inputs`, with `attrs`; its node is named after
   the op ("sin_3"), which errors name. */
FUSEC_API fusec_status fusec_graph_op(fusec_graph *graph, const char *op,
                                      size_t input_count,
                                      const char *const *inputs,
                                      size_t attr_count,
                                      const fusec_attr *attrs,
                                      const char **value);
/* Marks a value as the next graph output. */
FUSEC_API fusec_status fusec_graph_output(fusec_graph *graph,
                                          const char *value);

/* ---- Compiling --------------------------------------------------------- */

/* A model file: .json, .mlir, .onnx or .onnxtxt. */
FUSEC_API fusec_status fusec_compile_file(const char *path,
                                          const fusec_options *options,
                                          fusec_model **model);

typedef enum fusec_format {
  FUSEC_FORMAT_JSON = 0,     /* docs/json-format.md */
  FUSEC_FORMAT_MLIR = 1,     /* the fuse dialect */
  FUSEC_FORMAT_ONNX = 2,     /* a serialized ONNX ModelProto */
  FUSEC_FORMAT_ONNX_TEXT = 3 /* ONNX's text syntax */
} fusec_format;

/* A model held in memory; `name` (NULL: "<memory>") stands for its file in
   error messages. The bytes are read during the call only. */
FUSEC_API fusec_status fusec_compile_buffer(const void *data, size_t size,
                                            fusec_format format,
                                            const char *name,
                                            const fusec_options *options,
                                            fusec_model **model);
/* A graph built above; the graph stays the caller's. */
FUSEC_API fusec_status fusec_compile_graph(const fusec_graph *graph,
                                           const fusec_options *options,
                                           fusec_model **model);
/* Frees a model and everything it handed out (after its queued runs). */
FUSEC_API void fusec_model_destroy(fusec_model *model);

/* ---- Packages (docs/packages.md) ---------------------------------------- */

/* Writes the compiled model to `path` as one package file: its program,
   compiled kernels and weights (a CUDA model's PTX is compiled here). */
FUSEC_API fusec_status fusec_model_save(const fusec_model *model,
                                        const char *path);
/* Loads a package (fusec_model_save, `fusec MODEL --emit=package -o PATH`)
   with no compiler. FUSEC_ERROR naming the file for a corrupt, truncated or
   other-version package, or one this machine cannot run (a CUDA package
   without a GPU, another GPU architecture without PTX that fits). */
FUSEC_API fusec_status fusec_model_load(const char *path, fusec_model **model);

/* ---- Model queries ----------------------------------------------------- */

/* The target it was compiled for: FUSEC_TARGET_CPU or FUSEC_TARGET_CUDA. */
FUSEC_API fusec_status fusec_model_target(const fusec_model *model,
                                          fusec_target *target);
/* The model's name (its graph's). */
FUSEC_API fusec_status fusec_model_name(const fusec_model *model,
                                        const char **name);
/* How many graph inputs and outputs it has. */
FUSEC_API fusec_status fusec_model_input_count(const fusec_model *model,
                                               size_t *count);
FUSEC_API fusec_status fusec_model_output_count(const fusec_model *model,
                                                size_t *count);
/* Input or output `index`: its name, dtype and shape (`shape` points at
   `*ndim` dims owned by the model; a symbolic dim is -1). Any out-pointer
   may be NULL. */
FUSEC_API fusec_status fusec_model_input(const fusec_model *model, size_t index,
                                         const char **name, fusec_dtype *dtype,
                                         int32_t *ndim, const int64_t **shape);
FUSEC_API fusec_status fusec_model_output(const fusec_model *model,
                                          size_t index, const char **name,
                                          fusec_dtype *dtype, int32_t *ndim,
                                          const int64_t **shape);

/* The input whose memory output `index` may be given in a run on device
   tensors (the output updates that input in place, e.g. a KV cache's
   present and past: docs/dynamic-shapes.md), or -1: then the output must
   not overlap any input. */
FUSEC_API fusec_status fusec_model_output_updates_input(
    const fusec_model *model, size_t index, int64_t *input);

/* A model with symbolic dims: the shape of output `index` for inputs of
   these shapes (`ndims[i]` dims at `shapes[i]` for input i), bound as a run
   binds them; writes `*ndim` dims to `shape`, which has room for
   `capacity`. An input that does not fit the model is an error naming the
   input and the dim. */
FUSEC_API fusec_status fusec_model_output_shape(const fusec_model *model,
                                                size_t input_count,
                                                const int32_t *ndims,
                                                const int64_t *const *shapes,
                                                size_t index, int32_t capacity,
                                                int32_t *ndim, int64_t *shape);

/* ---- Running ----------------------------------------------------------- */

/* Runs the model: one tensor per input and per output, in order, each of
   the dtype and shape the model has for it (fusec_model_input/_output;
   with symbolic dims, the sizes the inputs bind and
   fusec_model_output_shape gives);
   the caller allocates the outputs. All tensors must be on one device:
   - FUSEC_DEVICE_CPU: inputs are read and outputs written in host memory
     (a CUDA model copies through the GPU); returns when they are written.
   - FUSEC_DEVICE_CUDA (CUDA models): the kernels read the inputs and write
     the outputs in device memory, with no host copies. `stream` is the
     caller's CUstream (e.g. PyTorch's current stream; CU_STREAM_LEGACY,
     (void *)0x1, for the legacy default stream): the run is ordered after
     the work queued there so far, the work queued there after this call
     after the run, and the call returns once the run is queued (on
     fusec's own stream, as a replayed CUDA graph unless disabled). With
     `stream` NULL the legacy default stream is the one ordered with, and
     the call returns when the outputs are written.
   Errors of queued work surface at the next call or fusec_model_synchronize. */
FUSEC_API fusec_status fusec_model_run(fusec_model *model, size_t input_count,
                                       const fusec_tensor *inputs,
                                       size_t output_count,
                                       const fusec_tensor *outputs,
                                       void *stream);
/* Waits for the model's queued device runs; reports their errors. */
FUSEC_API fusec_status fusec_model_synchronize(fusec_model *model);

/* ---- Kernels ----------------------------------------------------------- */

/* The generated kernels, in run order (library calls are not kernels). */
FUSEC_API fusec_status fusec_model_kernel_count(const fusec_model *model,
                                                size_t *count);
/* Kernel `index`: its name, its fused ops (`*op_count` names) and its
   source (its function: C++ for the CPU, CUDA C for the GPU). Any
   out-pointer may be NULL. */
FUSEC_API fusec_status fusec_model_kernel(const fusec_model *model,
                                          size_t index, const char **name,
                                          size_t *op_count,
                                          const char *const **ops,
                                          const char **source);

/* ---- Profiling --------------------------------------------------------- */

typedef enum fusec_profile_format {
  FUSEC_PROFILE_TEXT = 0, /* the table `fusec --run --profile` prints */
  FUSEC_PROFILE_JSON = 1  /* what `fusec --profile-json` writes */
} fusec_profile_format;

/* Runs the model `runs` times (after a warm-up) on seeded random inputs,
   timing each kernel and library call against the device's limits, as
   `fusec --run --profile=N` does. `*report` is owned by the model until
   its next profile. */
FUSEC_API fusec_status fusec_model_profile(fusec_model *model, int32_t runs,
                                           fusec_profile_format format,
                                           const char **report);

/* ---- Kernel cache ------------------------------------------------------ */

/* The cache directory `dir` names (NULL or "": the default, see
   fusec_options_set_cache_dir), written to `buffer` (NUL-terminated, cut
   to `size`); `*length` (if not NULL) gets its full length. */
FUSEC_API fusec_status fusec_cache_directory(const char *dir, char *buffer,
                                             size_t size, size_t *length);
/* Removes every entry of the cache in `dir` (NULL or "": the default). */
FUSEC_API fusec_status fusec_cache_clear(const char *dir);

#ifdef __cplusplus
}
#endif

#endif /* FUSEC_FUSEC_H */
