/*
 * Kernels of the demo image classifier, written by hand in the form TVM's LLVM backend emits
 * for `relay.build(mod, target="llvm")` (TVM's compiled-kernel ABI, kernel_abi.h):
 *
 *   - every kernel is an exported `TVMBackendPackedCFunc` named like TVM's fused functions
 *     (tvmgen_default_fused_...), specialised to static shapes, and validates its arguments
 *     (count, type codes, dtype, ndim, shape, strides, byte_offset, device) the way
 *     make_packed_api.cc / arg_binder.cc do, failing with __TVMAPISetLastError + return -1;
 *   - runtime services are reached only through the context pointers the runtime fills in at
 *     load time (__TVMAPISetLastError, __TVMBackendParallelLaunch, ...), so this library has no
 *     undefined references to the runtime, like an LLVM-built artifact;
 *   - outer loops run through __TVMBackendParallelLaunch(lambda, closure, 0) and split their
 *     iterations by penv->num_task; buffers of 1 KiB or more (the padded conv input) come from
 *     __TVMBackendAllocWorkspace and are freed with __TVMBackendFreeWorkspace.
 *
 * The kernels themselves are static and take the shape, batch first, as arguments; the
 * exported functions at the end fix the demo's shapes (batch 1). Other networks of the same
 * family (model.rs, `Spec`, other batch sizes included) are built from a generated C file that
 * defines DEMO_GENERATED_LAYERS, includes this one and exports one wrapper per layer instead,
 * as TVM emits one specialised function per fused op. A batch is computed image by image (row
 * by row) with exactly the operations of a batch of one, so row i of a batch-N run is
 * bit-identical to a batch-1 run of image i.
 *
 * Demo network (NCHW, float32):
 *   data[1,1,16,16]
 *   -> conv2d 3x3 pad 1 (8)  + bias + relu   tvmgen_default_fused_nn_conv2d_add_nn_relu
 *   -> max_pool2d 2x2 s2                      tvmgen_default_fused_nn_max_pool2d
 *   -> conv2d 3x3 pad 1 (16) + bias + relu   tvmgen_default_fused_nn_conv2d_add_nn_relu_1
 *   -> max_pool2d 2x2 s2                      tvmgen_default_fused_nn_max_pool2d_1
 *   -> batch_flatten [1,256]                  reshape_nop (__nop, shares storage)
 *   -> dense (10) + bias                      tvmgen_default_fused_nn_dense_add
 *   -> softmax                                tvmgen_default_fused_nn_softmax
 */
#include "kernel_abi.h"

/* ------------------------------------------------------------------------------------------ */
/* conv2d 3x3, stride 1, padding 1, NCHW/OIHW, + bias[O,1,1] + relu                           */

/* One image: the kernel launches this once per image of the batch, reusing the workspace, so
 * every image is computed exactly as in a batch of one. */
typedef struct {
  const float* data; /* [C, H, W]: one image of the batch */
  const float* w;    /* [O, C, 3, 3] */
  const float* bias; /* [O, 1, 1] */
  float* out;        /* [O, H, W]: that image's output */
  float* pad;        /* workspace: [C, H+2, W+2] */
  int64_t c, h, w_, o;
} ConvClosure;

static int conv_task(int task_id, TVMParallelGroupEnv* penv, void* cdata) {
  const ConvClosure* k = (const ConvClosure*)cdata;
  const int64_t ph = k->h + 2, pw = k->w_ + 2;
  /* Phase 1: each task pads a slice of the input channels into the workspace. */
  for (int64_t c = chunk_begin(k->c, task_id, penv->num_task); c < chunk_end(k->c, task_id, penv->num_task); ++c) {
    float* dst = k->pad + c * ph * pw;
    const float* src = k->data + c * k->h * k->w_;
    for (int64_t y = 0; y < ph; ++y)
      for (int64_t x = 0; x < pw; ++x)
        dst[y * pw + x] = (y >= 1 && y <= k->h && x >= 1 && x <= k->w_) ? src[(y - 1) * k->w_ + (x - 1)] : 0.f;
  }
  /* Every channel must be padded before any output channel reads it. */
  if (__TVMBackendParallelBarrier(task_id, penv) != 0) return -1;
  /* Phase 2: each task computes a slice of the output channels. */
  for (int64_t o = chunk_begin(k->o, task_id, penv->num_task); o < chunk_end(k->o, task_id, penv->num_task); ++o) {
    float* dst = k->out + o * k->h * k->w_;
    for (int64_t y = 0; y < k->h; ++y) {
      for (int64_t x = 0; x < k->w_; ++x) {
        float acc = 0.f;
        for (int64_t c = 0; c < k->c; ++c) {
          const float* p = k->pad + c * ph * pw + y * pw + x;
          const float* wk = k->w + (o * k->c + c) * 9;
          acc += p[0] * wk[0] + p[1] * wk[1] + p[2] * wk[2];
          acc += p[pw] * wk[3] + p[pw + 1] * wk[4] + p[pw + 2] * wk[5];
          acc += p[2 * pw] * wk[6] + p[2 * pw + 1] * wk[7] + p[2 * pw + 2] * wk[8];
        }
        float v = acc + k->bias[o];
        dst[y * k->w_ + x] = v > 0.f ? v : 0.f;
      }
    }
  }
  return 0;
}

/* Runs conv_task over each of the `n` images of `k` in turn (k->data, k->out: the whole batch). */
static int conv_images(ConvClosure k, int64_t n) {
  const float* data = k.data;
  float* out = k.out;
  for (int64_t i = 0; i < n; ++i) {
    k.data = data + i * k.c * k.h * k.w_;
    k.out = out + i * k.o * k.h * k.w_;
    int rc = __TVMBackendParallelLaunch(conv_task, &k, 0);
    if (rc != 0) return rc;
  }
  return 0;
}

static int conv2d_add_relu(TVMValue* args, int* codes, int num_args, const char* fn, int64_t n, int64_t c,
                           int64_t h, int64_t w, int64_t o) {
  if (check_num_args(args, codes, num_args, 4, fn) != 0) return -1;
  const int64_t s_data[4] = {n, c, h, w};
  const int64_t s_w[4] = {o, c, 3, 3};
  const int64_t s_b[3] = {o, 1, 1};
  const int64_t s_out[4] = {n, o, h, w};
  const DLTensor* data = tensor_arg(args, codes, 0, fn, 4, s_data);
  if (data == NULL) return -1;
  const DLTensor* wt = tensor_arg(args, codes, 1, fn, 4, s_w);
  if (wt == NULL) return -1;
  const DLTensor* bias = tensor_arg(args, codes, 2, fn, 3, s_b);
  if (bias == NULL) return -1;
  const DLTensor* out = tensor_arg(args, codes, 3, fn, 4, s_out);
  if (out == NULL) return -1;
  ConvClosure k = {(const float*)data->data, (const float*)wt->data, (const float*)bias->data,
                   (float*)out->data, NULL, c, h, w, o};
  uint64_t pad_bytes = (uint64_t)(c * (h + 2) * (w + 2)) * sizeof(float);
  k.pad = (float*)__TVMBackendAllocWorkspace(kDLCPU, data->device.device_id, pad_bytes, kDLFloat, 32);
  if (k.pad == NULL) return -1;
  int rc = conv_images(k, n);
  if (__TVMBackendFreeWorkspace(kDLCPU, data->device.device_id, k.pad) != 0) return -1;
  return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* max_pool2d 2x2, stride 2, NCHW                                                              */

typedef struct {
  const float* data; /* [N, C, H, W] */
  float* out;        /* [N, C, H/2, W/2] */
  int64_t planes;    /* N * C */
  int64_t h, w;
} PoolClosure;

static int pool_task(int task_id, TVMParallelGroupEnv* penv, void* cdata) {
  const PoolClosure* k = (const PoolClosure*)cdata;
  const int64_t oh = k->h / 2, ow = k->w / 2;
  const int64_t begin = chunk_begin(k->planes, task_id, penv->num_task);
  const int64_t end = chunk_end(k->planes, task_id, penv->num_task);
  for (int64_t c = begin; c < end; ++c) {
    const float* src = k->data + c * k->h * k->w;
    float* dst = k->out + c * oh * ow;
    for (int64_t y = 0; y < oh; ++y) {
      for (int64_t x = 0; x < ow; ++x) {
        const float* p = src + 2 * y * k->w + 2 * x;
        float m = p[0];
        m = p[1] > m ? p[1] : m;
        m = p[k->w] > m ? p[k->w] : m;
        m = p[k->w + 1] > m ? p[k->w + 1] : m;
        dst[y * ow + x] = m;
      }
    }
  }
  return 0;
}

static int max_pool2d(TVMValue* args, int* codes, int num_args, const char* fn, int64_t n, int64_t c, int64_t h,
                      int64_t w) {
  if (check_num_args(args, codes, num_args, 2, fn) != 0) return -1;
  const int64_t s_in[4] = {n, c, h, w};
  const int64_t s_out[4] = {n, c, h / 2, w / 2};
  const DLTensor* data = tensor_arg(args, codes, 0, fn, 4, s_in);
  if (data == NULL) return -1;
  const DLTensor* out = tensor_arg(args, codes, 1, fn, 4, s_out);
  if (out == NULL) return -1;
  PoolClosure k = {(const float*)data->data, (float*)out->data, n * c, h, w};
  return __TVMBackendParallelLaunch(pool_task, &k, 0);
}

/* ------------------------------------------------------------------------------------------ */
/* dense: out[M,N] = x[M,K] . w[N,K]^T + bias[N]                                               */

typedef struct {
  const float* x;
  const float* w;
  const float* bias;
  float* out;
  int64_t m, k, n;
} DenseClosure;

/* Each output element is one dot product over K in index order, whatever M and the split, so a
 * row of a batch gets the bits it gets alone. Tasks split the N output features; each weight row
 * is read once for up to DENSE_ROWS rows of the batch, whose sums run side by side (independent
 * accumulators: a batch costs far less than its rows one at a time, as with TVM's kernels). */
#define DENSE_ROWS 8
static int dense_task(int task_id, TVMParallelGroupEnv* penv, void* cdata) {
  const DenseClosure* d = (const DenseClosure*)cdata;
  const int64_t begin = chunk_begin(d->n, task_id, penv->num_task);
  const int64_t end = chunk_end(d->n, task_id, penv->num_task);
  for (int64_t j = begin; j < end; ++j) {
    const float* row = d->w + j * d->k;
    for (int64_t r0 = 0; r0 < d->m; r0 += DENSE_ROWS) {
      const int64_t rows = d->m - r0 < DENSE_ROWS ? d->m - r0 : DENSE_ROWS;
      float acc[DENSE_ROWS] = {0.f};
      const float* x = d->x + r0 * d->k;
      for (int64_t i = 0; i < d->k; ++i)
        for (int64_t r = 0; r < rows; ++r) acc[r] += x[r * d->k + i] * row[i];
      for (int64_t r = 0; r < rows; ++r) d->out[(r0 + r) * d->n + j] = acc[r] + d->bias[j];
    }
  }
  return 0;
}

static int dense_add(TVMValue* args, int* codes, int num_args, const char* fn, int64_t m, int64_t k, int64_t n) {
  if (check_num_args(args, codes, num_args, 4, fn) != 0) return -1;
  const int64_t s_x[2] = {m, k}, s_w[2] = {n, k}, s_b[1] = {n}, s_out[2] = {m, n};
  const DLTensor* x = tensor_arg(args, codes, 0, fn, 2, s_x);
  if (x == NULL) return -1;
  const DLTensor* w = tensor_arg(args, codes, 1, fn, 2, s_w);
  if (w == NULL) return -1;
  const DLTensor* b = tensor_arg(args, codes, 2, fn, 1, s_b);
  if (b == NULL) return -1;
  const DLTensor* out = tensor_arg(args, codes, 3, fn, 2, s_out);
  if (out == NULL) return -1;
  DenseClosure d = {(const float*)x->data, (const float*)w->data, (const float*)b->data, (float*)out->data,
                    m, k, n};
  return __TVMBackendParallelLaunch(dense_task, &d, 0);
}

/* ------------------------------------------------------------------------------------------ */
/* softmax over the last axis of [M,N], row by row (small: serial, as TVM leaves it)           */

static void softmax_row(const float* in, float* o, int64_t n) {
  float m = in[0];
  for (int64_t i = 1; i < n; ++i) m = in[i] > m ? in[i] : m;
  float sum = 0.f;
  for (int64_t i = 0; i < n; ++i) {
    o[i] = expf(in[i] - m);
    sum += o[i];
  }
  for (int64_t i = 0; i < n; ++i) o[i] = o[i] / sum;
}

static int softmax(TVMValue* args, int* codes, int num_args, const char* fn, int64_t m, int64_t n) {
  if (check_num_args(args, codes, num_args, 2, fn) != 0) return -1;
  const int64_t s[2] = {m, n};
  const DLTensor* x = tensor_arg(args, codes, 0, fn, 2, s);
  if (x == NULL) return -1;
  const DLTensor* out = tensor_arg(args, codes, 1, fn, 2, s);
  if (out == NULL) return -1;
  for (int64_t r = 0; r < m; ++r) softmax_row((const float*)x->data + r * n, (float*)out->data + r * n, n);
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* The demo's exported kernels (left out when a generated layer file includes this one).       */

#ifndef DEMO_GENERATED_LAYERS
EXPORT int tvmgen_default_fused_nn_conv2d_add_nn_relu(TVMValue* args, int* codes, int num_args, TVMValue* rv,
                                                      int* rc, void* rh) {
  (void)rv; (void)rc; (void)rh;
  return conv2d_add_relu(args, codes, num_args, "tvmgen_default_fused_nn_conv2d_add_nn_relu", 1, 1, 16, 16, 8);
}

EXPORT int tvmgen_default_fused_nn_conv2d_add_nn_relu_1(TVMValue* args, int* codes, int num_args, TVMValue* rv,
                                                        int* rc, void* rh) {
  (void)rv; (void)rc; (void)rh;
  return conv2d_add_relu(args, codes, num_args, "tvmgen_default_fused_nn_conv2d_add_nn_relu_1", 1, 8, 8, 8, 16);
}

EXPORT int tvmgen_default_fused_nn_max_pool2d(TVMValue* args, int* codes, int num_args, TVMValue* rv, int* rc,
                                              void* rh) {
  (void)rv; (void)rc; (void)rh;
  return max_pool2d(args, codes, num_args, "tvmgen_default_fused_nn_max_pool2d", 1, 8, 16, 16);
}

EXPORT int tvmgen_default_fused_nn_max_pool2d_1(TVMValue* args, int* codes, int num_args, TVMValue* rv, int* rc,
                                                void* rh) {
  (void)rv; (void)rc; (void)rh;
  return max_pool2d(args, codes, num_args, "tvmgen_default_fused_nn_max_pool2d_1", 1, 16, 8, 8);
}

EXPORT int tvmgen_default_fused_nn_dense_add(TVMValue* args, int* codes, int num_args, TVMValue* rv, int* rc,
                                             void* rh) {
  (void)rv; (void)rc; (void)rh;
  return dense_add(args, codes, num_args, "tvmgen_default_fused_nn_dense_add", 1, 256, 10);
}

EXPORT int tvmgen_default_fused_nn_softmax(TVMValue* args, int* codes, int num_args, TVMValue* rv, int* rc,
                                           void* rh) {
  (void)rv; (void)rc; (void)rh;
  return softmax(args, codes, num_args, "tvmgen_default_fused_nn_softmax", 1, 10);
}
#endif /* DEMO_GENERATED_LAYERS */
