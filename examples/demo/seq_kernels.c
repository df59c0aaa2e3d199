/*
 * Kernels of the demo sequence model (examples/demo/seq_model.rs): one causal transformer-like
 * block over already-embedded tokens, float32, with TVM's compiled-kernel ABI (kernel_abi.h:
 * argument checks, context pointers, parallel launch).
 *
 *   tokens[B,S,H]
 *   -> q, k, v = dense + bias per token                 tvmgen_default_fused_nn_dense_add(_1,_2)
 *   -> attn[B,S,S] = causal softmax(q k^T / sqrt(H))    tvmgen_default_fused_nn_batch_matmul_divide_where_nn_softmax
 *   -> ctx[B,S,H] = attn v                              tvmgen_default_fused_nn_batch_matmul
 *   -> h = ctx Wo^T + bo + tokens                       tvmgen_default_fused_nn_dense_add_add
 *   -> f = relu(h W1^T + b1)   [B,S,F]                  tvmgen_default_fused_nn_dense_add_nn_relu
 *   -> out = f W2^T + b2 + h                            tvmgen_default_fused_nn_dense_add_add_1
 *
 * The kernels are static and take the sizes as arguments (the batch B first, then S); model
 * code generates a C file that includes this one and exports one wrapper per op with the
 * model's static shapes. A batch is B sequences, each computed as it is alone: [B,S,...]
 * tensors are B [1,S,...] blocks one after the other.
 *
 * Row i of every result is computed from rows j <= i only, with the same operations in the
 * same order whatever S: loops over keys stop at i (never over the padded tail), dot products
 * run in index order. So a version built for a longer sequence gives, on the first s rows (and
 * the top-left s x s of attn), exactly the bits of the version built for s tokens.
 */
#include "kernel_abi.h"

/* ------------------------------------------------------------------------------------------ */
/* Per-token dense: out[B,S,N] = x[B,S,K] . w[N,K]^T + bias[N] (then relu, or + residual)      */

typedef struct {
  const float* x;
  const float* w;
  const float* bias;
  const float* residual; /* [B,S,N] added last, or NULL */
  float* out;
  int64_t s, k, n; /* s: the tokens of the whole batch (B*S) */
  int relu;
} TokenDenseClosure;

static int token_dense_task(int task_id, TVMParallelGroupEnv* penv, void* cdata) {
  const TokenDenseClosure* d = (const TokenDenseClosure*)cdata;
  const int64_t total = d->s * d->n;
  const int64_t begin = chunk_begin(total, task_id, penv->num_task);
  const int64_t end = chunk_end(total, task_id, penv->num_task);
  for (int64_t e = begin; e < end; ++e) {
    const int64_t t = e / d->n, j = e % d->n;
    const float* x = d->x + t * d->k;
    const float* row = d->w + j * d->k;
    float acc = 0.f;
    for (int64_t i = 0; i < d->k; ++i) acc += x[i] * row[i];
    float v = acc + d->bias[j];
    if (d->relu) v = v > 0.f ? v : 0.f;
    if (d->residual != NULL) v = v + d->residual[e];
    d->out[e] = v;
  }
  return 0;
}

/* Checks and runs a per-token dense with `num_args` 4 (x, w, bias, out) or 5 (x, w, bias,
 * residual, out). */
static int token_dense(TVMValue* args, int* codes, int num_args, const char* fn, int64_t batch, int64_t s,
                       int64_t k, int64_t n, int relu, int expected_args) {
  if (check_num_args(args, codes, num_args, expected_args, fn) != 0) return -1;
  const int64_t s_x[3] = {batch, s, k}, s_w[2] = {n, k}, s_b[1] = {n}, s_out[3] = {batch, s, n};
  const DLTensor* x = tensor_arg(args, codes, 0, fn, 3, s_x);
  if (x == NULL) return -1;
  const DLTensor* w = tensor_arg(args, codes, 1, fn, 2, s_w);
  if (w == NULL) return -1;
  const DLTensor* b = tensor_arg(args, codes, 2, fn, 1, s_b);
  if (b == NULL) return -1;
  const DLTensor* residual = NULL;
  if (expected_args == 5) {
    residual = tensor_arg(args, codes, 3, fn, 3, s_out);
    if (residual == NULL) return -1;
  }
  const DLTensor* out = tensor_arg(args, codes, expected_args - 1, fn, 3, s_out);
  if (out == NULL) return -1;
  TokenDenseClosure d = {(const float*)x->data, (const float*)w->data, (const float*)b->data,
                         residual != NULL ? (const float*)residual->data : NULL, (float*)out->data, batch * s, k, n, relu};
  return __TVMBackendParallelLaunch(token_dense_task, &d, 0);
}

static int dense_add(TVMValue* args, int* codes, int num_args, const char* fn, int64_t b, int64_t s, int64_t k,
                     int64_t n) {
  return token_dense(args, codes, num_args, fn, b, s, k, n, 0, 4);
}

static int dense_add_relu(TVMValue* args, int* codes, int num_args, const char* fn, int64_t b, int64_t s, int64_t k,
                          int64_t n) {
  return token_dense(args, codes, num_args, fn, b, s, k, n, 1, 4);
}

static int dense_add_add(TVMValue* args, int* codes, int num_args, const char* fn, int64_t b, int64_t s, int64_t k,
                         int64_t n) {
  return token_dense(args, codes, num_args, fn, b, s, k, n, 0, 5);
}

/* ------------------------------------------------------------------------------------------ */
/* Causal attention probabilities: attn[B,S,S], row i = softmax_{j<=i}(q_i . k_j / sqrt(D)),   */
/* 0 for j > i.                                                                                 */

typedef struct {
  const float* q;
  const float* k;
  float* attn;
  int64_t b, s, d;
} AttnClosure;

/* Row i of sequence `seq`'s probabilities: the scores go into the row itself, then become the
 * softmax. */
static void causal_softmax_row(const AttnClosure* a, int64_t seq, int64_t i) {
  const float sqrt_d = sqrtf((float)a->d);
  const float* q = a->q + (seq * a->s + i) * a->d;
  const float* keys = a->k + seq * a->s * a->d;
  float* row = a->attn + (seq * a->s + i) * a->s;
  for (int64_t j = 0; j <= i; ++j) {
    const float* k = keys + j * a->d;
    float acc = 0.f;
    for (int64_t c = 0; c < a->d; ++c) acc += q[c] * k[c];
    row[j] = acc / sqrt_d;
  }
  float m = row[0];
  for (int64_t j = 1; j <= i; ++j) m = row[j] > m ? row[j] : m;
  float sum = 0.f;
  for (int64_t j = 0; j <= i; ++j) {
    row[j] = expf(row[j] - m);
    sum += row[j];
  }
  for (int64_t j = 0; j <= i; ++j) row[j] = row[j] / sum;
  for (int64_t j = i + 1; j < a->s; ++j) row[j] = 0.f;
}

static int attn_task(int task_id, TVMParallelGroupEnv* penv, void* cdata) {
  const AttnClosure* a = (const AttnClosure*)cdata;
  const int64_t begin = chunk_begin(a->b * a->s, task_id, penv->num_task);
  const int64_t end = chunk_end(a->b * a->s, task_id, penv->num_task);
  for (int64_t r = begin; r < end; ++r) causal_softmax_row(a, r / a->s, r % a->s);
  return 0;
}

static int causal_attention_softmax(TVMValue* args, int* codes, int num_args, const char* fn, int64_t b,
                                    int64_t s, int64_t d) {
  if (check_num_args(args, codes, num_args, 3, fn) != 0) return -1;
  const int64_t s_qk[3] = {b, s, d}, s_out[3] = {b, s, s};
  const DLTensor* q = tensor_arg(args, codes, 0, fn, 3, s_qk);
  if (q == NULL) return -1;
  const DLTensor* k = tensor_arg(args, codes, 1, fn, 3, s_qk);
  if (k == NULL) return -1;
  const DLTensor* out = tensor_arg(args, codes, 2, fn, 3, s_out);
  if (out == NULL) return -1;
  AttnClosure a = {(const float*)q->data, (const float*)k->data, (float*)out->data, b, s, d};
  return __TVMBackendParallelLaunch(attn_task, &a, 0);
}

/* ------------------------------------------------------------------------------------------ */
/* Causal attention output: ctx[B,S,D], ctx_i = sum_{j<=i} attn_ij v_j (j in order)            */

typedef struct {
  const float* attn;
  const float* v;
  float* out;
  int64_t b, s, d;
} ContextClosure;

static int context_task(int task_id, TVMParallelGroupEnv* penv, void* cdata) {
  const ContextClosure* c = (const ContextClosure*)cdata;
  const int64_t begin = chunk_begin(c->b * c->s, task_id, penv->num_task);
  const int64_t end = chunk_end(c->b * c->s, task_id, penv->num_task);
  for (int64_t r = begin; r < end; ++r) {
    const int64_t i = r % c->s;
    const float* p = c->attn + r * c->s;
    const float* v = c->v + (r - i) * c->d; /* the sequence's first token */
    float* o = c->out + r * c->d;
    for (int64_t col = 0; col < c->d; ++col) {
      float acc = 0.f;
      for (int64_t j = 0; j <= i; ++j) acc += p[j] * v[j * c->d + col];
      o[col] = acc;
    }
  }
  return 0;
}

static int causal_batch_matmul(TVMValue* args, int* codes, int num_args, const char* fn, int64_t b, int64_t s,
                               int64_t d) {
  if (check_num_args(args, codes, num_args, 3, fn) != 0) return -1;
  const int64_t s_attn[3] = {b, s, s}, s_v[3] = {b, s, d};
  const DLTensor* attn = tensor_arg(args, codes, 0, fn, 3, s_attn);
  if (attn == NULL) return -1;
  const DLTensor* v = tensor_arg(args, codes, 1, fn, 3, s_v);
  if (v == NULL) return -1;
  const DLTensor* out = tensor_arg(args, codes, 2, fn, 3, s_v);
  if (out == NULL) return -1;
  ContextClosure c = {(const float*)attn->data, (const float*)v->data, (float*)out->data, b, s, d};
  return __TVMBackendParallelLaunch(context_task, &c, 0);
}
