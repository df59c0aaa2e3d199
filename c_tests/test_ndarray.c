/*
 * NDArray C API: allocation over dtypes/shapes, validation, byte copies, array-to-array copies,
 * the container layout (object header 16 bytes before the handle), DLPack exchange with deleter
 * accounting, and copies honouring byte_offset / rejecting strides.
 */
#include <stdint.h>
#include <tvm_runtime.h>

#include "tvm_test.h"

static void* object_of_array(TVMArrayHandle h) { return (char*)h - 16; }
static int aligned(const void* p, size_t a) { return ((uintptr_t)p % a) == 0; }

/* ---- a DLManagedTensor made in C, with a counting deleter ---------------------------------- */

typedef struct {
  DLManagedTensor managed;
  int64_t shape[2];
  int64_t strides[2];
  void* allocation;
  int* deleted;
} CTensor;

static void ctensor_deleter(DLManagedTensor* self) {
  CTensor* t = (CTensor*)self->manager_ctx;
  (*t->deleted)++;
  free(t->allocation);
  free(t);
}

/* A 2x3 float32 tensor holding 0.5*i, data at `allocation + offset_in_data` with byte_offset
 * `byte_offset` on top. */
static DLManagedTensor* make_ctensor(int* deleted, size_t offset_in_data, uint64_t byte_offset) {
  CTensor* t = (CTensor*)calloc(1, sizeof *t);
  t->allocation = aligned_alloc(64, 256);
  t->deleted = deleted;
  t->shape[0] = 2;
  t->shape[1] = 3;
  float* values = (float*)((char*)t->allocation + offset_in_data + byte_offset);
  for (int i = 0; i < 6; ++i) values[i] = 0.5f * (float)i;
  DLTensor* d = &t->managed.dl_tensor;
  d->data = (char*)t->allocation + offset_in_data;
  d->device.device_type = kDLCPU;
  d->device.device_id = 0;
  d->ndim = 2;
  d->dtype.code = kDLFloat;
  d->dtype.bits = 32;
  d->dtype.lanes = 1;
  d->shape = t->shape;
  d->strides = NULL;
  d->byte_offset = byte_offset;
  t->managed.manager_ctx = t;
  t->managed.deleter = ctensor_deleter;
  return &t->managed;
}

static DLTensor stack_tensor(void* data, int64_t* shape, int ndim, uint8_t code, uint8_t bits) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = kDLCPU;
  t.device.device_id = 0;
  t.ndim = ndim;
  t.dtype.code = code;
  t.dtype.bits = bits;
  t.dtype.lanes = 1;
  t.shape = shape;
  t.strides = NULL;
  t.byte_offset = 0;
  return t;
}

/* Allocate, check the DLTensor fields, round-trip `nbytes` of patterned data, free. */
static void alloc_roundtrip(const int64_t* shape, int ndim, int code, int bits, int lanes,
                            size_t expected_nbytes) {
  TVMArrayHandle h = NULL;
  if (!CHECK_OK(TVMArrayAlloc(shape, ndim, code, bits, lanes, kDLCPU, 0, &h)) || h == NULL) {
    fprintf(stderr, "    (alloc of code=%d bits=%d lanes=%d ndim=%d)\n", code, bits, lanes, ndim);
    return;
  }
  CHECK(h->ndim == ndim);
  for (int i = 0; i < ndim; ++i) CHECK(h->shape[i] == shape[i]);
  CHECK(h->shape != shape); /* the shape is copied */
  CHECK(h->dtype.code == code && h->dtype.bits == bits && h->dtype.lanes == lanes);
  CHECK(h->device.device_type == kDLCPU && h->device.device_id == 0);
  CHECK(h->strides == NULL);
  CHECK(h->byte_offset == 0);
  CHECK(h->data != NULL);
  CHECK(aligned(h->data, 64));
  unsigned tindex = 0;
  CHECK_OK(TVMArrayGetTypeIndex(h, &tindex));
  CHECK(tindex == 2);
  unsigned char* in = (unsigned char*)malloc(expected_nbytes + 1);
  unsigned char* out = (unsigned char*)malloc(expected_nbytes + 1);
  for (size_t i = 0; i < expected_nbytes; ++i) in[i] = (unsigned char)(i * 7 + 3);
  memset(out, 0, expected_nbytes + 1);
  CHECK_OK(TVMArrayCopyFromBytes(h, in, expected_nbytes));
  CHECK_OK(TVMArrayCopyToBytes(h, out, expected_nbytes));
  CHECK(memcmp(in, out, expected_nbytes) == 0);
  /* one byte more or less is rejected */
  CHECK(TVMArrayCopyFromBytes(h, in, expected_nbytes + 1) == -1);
  if (expected_nbytes > 0) CHECK(TVMArrayCopyToBytes(h, out, expected_nbytes - 1) == -1);
  free(in);
  free(out);
  CHECK_OK(TVMArrayFree(h));
}

int main(void) {
  /* ---- allocation over dtypes and shapes ----------------------------------------------------- */
  {
    int64_t s23[2] = {2, 3};
    int64_t s5[1] = {5};
    int64_t s222[3] = {2, 2, 2};
    int64_t s30[2] = {3, 0};
    int64_t s0[1] = {0};
    int64_t s1111[4] = {1, 1, 1, 1};
    alloc_roundtrip(s23, 2, kDLFloat, 32, 1, 24);
    alloc_roundtrip(s5, 1, kDLInt, 8, 1, 5);
    alloc_roundtrip(s5, 1, kDLUInt, 8, 1, 5);
    alloc_roundtrip(s222, 3, kDLInt, 64, 1, 64);
    alloc_roundtrip(s23, 2, kDLFloat, 64, 1, 48);
    alloc_roundtrip(s23, 2, kDLFloat, 16, 1, 12);
    alloc_roundtrip(s5, 1, kDLBfloat, 16, 1, 10);
    alloc_roundtrip(s5, 1, kDLFloat, 32, 4, 80);  /* float32x4 */
    alloc_roundtrip(s5, 1, kDLInt, 4, 1, 5);      /* int4: one byte per element */
    alloc_roundtrip(s5, 1, kDLUInt, 1, 1, 5);     /* bool: one byte per element */
    alloc_roundtrip(s1111, 4, kDLInt, 16, 1, 2);
    alloc_roundtrip(NULL, 0, kDLFloat, 32, 1, 4); /* ndim 0: a scalar */
    alloc_roundtrip(s30, 2, kDLFloat, 32, 1, 0);  /* zero-size dim */
    alloc_roundtrip(s0, 1, kDLInt, 32, 1, 0);
  }
  {
    /* a scalar's value survives; zero-size copies with a NULL buffer are fine */
    TVMArrayHandle h = NULL;
    REQUIRE_OK(TVMArrayAlloc(NULL, 0, kDLFloat, 64, 1, kDLCPU, 0, &h));
    double v = 3.75, back = 0;
    CHECK_OK(TVMArrayCopyFromBytes(h, &v, sizeof v));
    CHECK_OK(TVMArrayCopyToBytes(h, &back, sizeof back));
    CHECK(back == 3.75);
    CHECK(*(double*)h->data == 3.75);
    CHECK_OK(TVMArrayFree(h));
    int64_t s30[2] = {3, 0};
    REQUIRE_OK(TVMArrayAlloc(s30, 2, kDLFloat, 32, 1, kDLCPU, 0, &h));
    CHECK_OK(TVMArrayCopyFromBytes(h, NULL, 0));
    CHECK_OK(TVMArrayCopyToBytes(h, NULL, 0));
    TVMArrayHandle h2 = NULL;
    REQUIRE_OK(TVMArrayAlloc(s30, 2, kDLFloat, 32, 1, kDLCPU, 0, &h2));
    CHECK_OK(TVMArrayCopyFromTo(h, h2, NULL));
    CHECK_OK(TVMArrayFree(h));
    CHECK_OK(TVMArrayFree(h2));
  }

  {
    /* data alignment is max(64, element bytes): float32x32 elements are 128 bytes */
    int64_t s3[1] = {3};
    TVMArrayHandle h = NULL;
    REQUIRE_OK(TVMArrayAlloc(s3, 1, kDLFloat, 32, 32, kDLCPU, 0, &h));
    CHECK(aligned(h->data, 128));
    CHECK_OK(TVMArrayFree(h));
    REQUIRE_OK(TVMArrayAlloc(s3, 1, kDLInt, 64, 32, kDLCPU, 0, &h));
    CHECK(aligned(h->data, 256));
    CHECK_OK(TVMArrayFree(h));
  }

  /* ---- invalid allocations -------------------------------------------------------------------- */
  {
    int64_t s[2] = {2, 3};
    int64_t neg[2] = {2, -3};
    TVMArrayHandle h = NULL;
    CHECK_FAIL(TVMArrayAlloc(s, 2, kDLFloat, 12, 1, kDLCPU, 0, &h), "bits");
    CHECK_FAIL(TVMArrayAlloc(s, 2, kDLFloat, 32, 0, kDLCPU, 0, &h), "lanes");
    CHECK_FAIL(TVMArrayAlloc(s, 2, kDLFloat, 4, 1, kDLCPU, 0, &h), "bits");  /* float4: no */
    CHECK_FAIL(TVMArrayAlloc(s, 2, kDLInt, 24, 1, kDLCPU, 0, &h), "bits");   /* not 2^k */
    CHECK_FAIL(TVMArrayAlloc(s, 2, kDLInt, 0, 1, kDLCPU, 0, &h), "bits");
    CHECK(TVMArrayAlloc(s, 2, kDLFloat, 32, -1, kDLCPU, 0, &h) == -1);
    CHECK(TVMArrayAlloc(s, 2, kDLFloat, 300, 1, kDLCPU, 0, &h) == -1);
    CHECK(TVMArrayAlloc(neg, 2, kDLFloat, 32, 1, kDLCPU, 0, &h) == -1);
    CHECK(TVMArrayAlloc(s, -1, kDLFloat, 32, 1, kDLCPU, 0, &h) == -1);
    int64_t huge[2] = {INT64_MAX, 4};
    CHECK_FAIL(TVMArrayAlloc(huge, 2, kDLFloat, 32, 1, kDLCPU, 0, &h), "overflow");
    CHECK_FAIL(TVMArrayAlloc(s, 2, kDLFloat, 32, 1, kDLCUDA, 0, &h), "cuda");
    CHECK_FAIL(TVMArrayAlloc(s, 2, kDLFloat, 32, 1, kDLVulkan, 0, &h), "vulkan");
    CHECK(h == NULL);
  }

  /* ---- byte-count and size mismatches --------------------------------------------------------- */
  {
    int64_t s[2] = {2, 3};
    int64_t s7[1] = {7};
    TVMArrayHandle a = NULL, b = NULL, c = NULL;
    REQUIRE_OK(TVMArrayAlloc(s, 2, kDLFloat, 32, 1, kDLCPU, 0, &a));
    REQUIRE_OK(TVMArrayAlloc(s7, 1, kDLFloat, 32, 1, kDLCPU, 0, &b));
    REQUIRE_OK(TVMArrayAlloc(s, 2, kDLInt, 32, 1, kDLCPU, 0, &c));
    float buf[8] = {0};
    CHECK_FAIL(TVMArrayCopyFromBytes(a, buf, 20), "24");
    CHECK_FAIL(TVMArrayCopyFromBytes(a, buf, 28), "24");
    CHECK_FAIL(TVMArrayCopyToBytes(a, buf, 32), "24");
    CHECK_FAIL(TVMArrayCopyFromBytes(a, NULL, 24), "`data`");
    CHECK_FAIL(TVMArrayCopyFromTo(a, b, NULL), "mismatch");
    CHECK_FAIL(TVMArrayCopyFromTo(b, a, NULL), "mismatch");
    /* same byte size, different dtype: a flat byte copy, as in TVM */
    float fv[6] = {1, 2, 3, 4, 5, 6};
    int32_t iv[6] = {0};
    CHECK_OK(TVMArrayCopyFromBytes(a, fv, sizeof fv));
    CHECK_OK(TVMArrayCopyFromTo(a, c, NULL));
    CHECK_OK(TVMArrayCopyToBytes(c, iv, sizeof iv));
    CHECK(memcmp(iv, fv, sizeof fv) == 0);
    /* NDArray <-> stack DLTensor with the same shape */
    float out[6] = {0};
    int64_t s2[2] = {2, 3};
    DLTensor st = stack_tensor(out, s2, 2, kDLFloat, 32);
    CHECK_OK(TVMArrayCopyFromTo(a, &st, NULL));
    CHECK(out[0] == 1 && out[5] == 6);
    CHECK_OK(TVMArrayFree(a));
    CHECK_OK(TVMArrayFree(b));
    CHECK_OK(TVMArrayFree(c));
  }

  /* ---- object header: type index and reference count ------------------------------------------ */
  {
    int64_t s[1] = {4};
    TVMArrayHandle h = NULL;
    REQUIRE_OK(TVMArrayAlloc(s, 1, kDLFloat, 32, 1, kDLCPU, 0, &h));
    void* obj = object_of_array(h);
    unsigned ti = 99;
    CHECK_OK(TVMObjectGetTypeIndex(obj, &ti));
    CHECK(ti == 2);
    ti = 99;
    CHECK_OK(TVMArrayGetTypeIndex(h, &ti));
    CHECK(ti == 2);
    CHECK(*(uint32_t*)obj == 70); /* the header holds tvm-ffi's index: ffi.Tensor */
    CHECK(tvm_test_refcount(obj) == 1);
    float vals[4] = {9, 8, 7, 6}, back[4] = {0};
    CHECK_OK(TVMArrayCopyFromBytes(h, vals, sizeof vals));
    /* an extra reference on the object keeps the array alive past TVMArrayFree */
    CHECK_OK(TVMObjectRetain(obj));
    CHECK(tvm_test_refcount(obj) == 2);
    CHECK_OK(TVMArrayFree(h));
    CHECK(tvm_test_refcount(obj) == 1);
    CHECK_OK(TVMArrayCopyToBytes(h, back, sizeof back));
    CHECK(memcmp(vals, back, sizeof vals) == 0);
    CHECK(h->shape[0] == 4 && aligned(h->data, 64));
    CHECK_OK(TVMObjectFree(obj)); /* the last reference: freed */
  }

  /* ---- DLPack export / re-import of runtime arrays -------------------------------------------- */
  {
    int64_t s[2] = {2, 3};
    TVMArrayHandle h = NULL;
    REQUIRE_OK(TVMArrayAlloc(s, 2, kDLInt, 32, 1, kDLCPU, 0, &h));
    void* obj = object_of_array(h);
    int32_t vals[6] = {10, 20, 30, 40, 50, 60};
    CHECK_OK(TVMArrayCopyFromBytes(h, vals, sizeof vals));

    DLManagedTensor* m = NULL;
    REQUIRE_OK(TVMArrayToDLPack(h, &m));
    REQUIRE(m != NULL);
    CHECK(m->deleter != NULL);
    CHECK(m->dl_tensor.data == h->data);
    CHECK(m->dl_tensor.ndim == 2 && m->dl_tensor.shape[0] == 2 && m->dl_tensor.shape[1] == 3);
    CHECK(m->dl_tensor.dtype.code == kDLInt && m->dl_tensor.dtype.bits == 32);
    CHECK(m->dl_tensor.byte_offset == 0);
    CHECK(tvm_test_refcount(obj) == 2); /* the managed tensor holds the array */

    /* import the managed tensor again: same memory, a new array object */
    TVMArrayHandle h2 = NULL;
    REQUIRE_OK(TVMArrayFromDLPack(m, &h2));
    REQUIRE(h2 != NULL);
    CHECK(h2 != h);
    CHECK(h2->data == h->data);
    CHECK(h2->ndim == 2 && h2->shape[0] == 2 && h2->shape[1] == 3);
    unsigned ti = 0;
    CHECK_OK(TVMArrayGetTypeIndex(h2, &ti));
    CHECK(ti == 2);
    int32_t back[6] = {0};
    CHECK_OK(TVMArrayCopyToBytes(h2, back, sizeof back));
    CHECK(memcmp(vals, back, sizeof vals) == 0);
    /* writes through one are seen through the other */
    ((int32_t*)h2->data)[5] = -1;
    CHECK(((int32_t*)h->data)[5] == -1);

    /* Free the original handle: the data stays alive through h2 -> m -> array. */
    CHECK_OK(TVMObjectRetain(obj)); /* keep one extra to observe the deleter */
    CHECK_OK(TVMArrayFree(h));
    CHECK(tvm_test_refcount(obj) == 2);
    CHECK_OK(TVMArrayCopyToBytes(h2, back, sizeof back));
    CHECK(back[0] == 10 && back[5] == -1);
    /* Freeing h2 runs m's deleter exactly once: one reference to the original is dropped. */
    CHECK_OK(TVMArrayFree(h2));
    CHECK(tvm_test_refcount(obj) == 1);
    CHECK_OK(TVMObjectFree(obj));
  }
  {
    /* TVMDLManagedTensorCallDeleter releases an exported tensor */
    int64_t s[1] = {16};
    TVMArrayHandle h = NULL;
    REQUIRE_OK(TVMArrayAlloc(s, 1, kDLUInt, 8, 1, kDLCPU, 0, &h));
    void* obj = object_of_array(h);
    DLManagedTensor* m1 = NULL;
    DLManagedTensor* m2 = NULL;
    CHECK_OK(TVMArrayToDLPack(h, &m1));
    CHECK_OK(TVMArrayToDLPack(h, &m2));
    CHECK(m1 != m2);
    CHECK(tvm_test_refcount(obj) == 3);
    TVMDLManagedTensorCallDeleter(m1);
    CHECK(tvm_test_refcount(obj) == 2);
    TVMDLManagedTensorCallDeleter(m2);
    CHECK(tvm_test_refcount(obj) == 1);
    CHECK_OK(TVMArrayFree(h));
  }

  /* ---- DLPack import of tensors made in C ------------------------------------------------------- */
  {
    int deleted = 0;
    DLManagedTensor* m = make_ctensor(&deleted, 0, 0);
    void* data = m->dl_tensor.data;
    TVMArrayHandle h = NULL;
    REQUIRE_OK(TVMArrayFromDLPack(m, &h));
    CHECK(h->data == data);
    CHECK(h->ndim == 2 && h->shape[0] == 2 && h->shape[1] == 3);
    CHECK(h->shape != m->dl_tensor.shape); /* copied */
    float back[6] = {0};
    CHECK_OK(TVMArrayCopyToBytes(h, back, sizeof back));
    CHECK(back[0] == 0.0f && back[1] == 0.5f && back[5] == 2.5f);
    CHECK(deleted == 0);
    /* exporting it again and dropping that keeps it alive */
    DLManagedTensor* again = NULL;
    CHECK_OK(TVMArrayToDLPack(h, &again));
    CHECK(again != NULL && again->dl_tensor.data == data);
    CHECK_OK(TVMArrayFree(h));
    CHECK(deleted == 0);
    TVMDLManagedTensorCallDeleter(again);
    CHECK(deleted == 1);
  }
  {
    /* aligned data plus a 64-byte byte_offset is accepted and honoured */
    int deleted = 0;
    DLManagedTensor* m = make_ctensor(&deleted, 0, 64);
    TVMArrayHandle h = NULL;
    REQUIRE_OK(TVMArrayFromDLPack(m, &h));
    CHECK(h->byte_offset == 64);
    float back[6] = {0};
    CHECK_OK(TVMArrayCopyToBytes(h, back, sizeof back));
    CHECK(back[2] == 1.0f && back[5] == 2.5f);
    float in[6] = {6, 5, 4, 3, 2, 1};
    CHECK_OK(TVMArrayCopyFromBytes(h, in, sizeof in));
    CHECK(((float*)((char*)h->data + 64))[0] == 6.0f);
    CHECK_OK(TVMArrayFree(h));
    CHECK(deleted == 1);
  }
  {
    /* misaligned data is rejected and the caller keeps ownership */
    int deleted = 0;
    DLManagedTensor* m = make_ctensor(&deleted, 4, 0);
    TVMArrayHandle h = NULL;
    CHECK_FAIL(TVMArrayFromDLPack(m, &h), "align");
    CHECK(deleted == 0);
    CHECK(((float*)m->dl_tensor.data)[1] == 0.5f); /* still ours and intact */
    /* aligned data with a misaligned byte_offset too */
    DLManagedTensor* m2 = make_ctensor(&deleted, 0, 4);
    CHECK_FAIL(TVMArrayFromDLPack(m2, &h), "align");
    CHECK(deleted == 0);
    TVMDLManagedTensorCallDeleter(m);
    CHECK(deleted == 1);
    TVMDLManagedTensorCallDeleter(m2);
    CHECK(deleted == 2);
  }
  {
    /* strided DLPack tensors are rejected (caller keeps ownership); compact explicit strides are ok */
    int deleted = 0;
    DLManagedTensor* m = make_ctensor(&deleted, 0, 0);
    CTensor* ct = (CTensor*)m->manager_ctx;
    ct->strides[0] = 1;
    ct->strides[1] = 2; /* column-major */
    m->dl_tensor.strides = ct->strides;
    TVMArrayHandle h = NULL;
    CHECK_FAIL(TVMArrayFromDLPack(m, &h), "strided");
    CHECK(deleted == 0);
    ct->strides[0] = 3;
    ct->strides[1] = 1; /* row-major, spelled out */
    CHECK_OK(TVMArrayFromDLPack(m, &h));
    if (h) {
      float back[6] = {0};
      CHECK_OK(TVMArrayCopyToBytes(h, back, sizeof back));
      CHECK(back[4] == 2.0f);
      CHECK_OK(TVMArrayFree(h));
    }
    CHECK(deleted == 1);
  }

  /* ---- strided and offset stack tensors in copies --------------------------------------------- */
  {
    float src[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    float dst[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    int64_t s4[1] = {4};
    DLTensor from = stack_tensor(src, s4, 1, kDLFloat, 32);
    DLTensor to = stack_tensor(dst, s4, 1, kDLFloat, 32);
    from.byte_offset = 2 * sizeof(float); /* src[2..6) */
    to.byte_offset = 1 * sizeof(float);   /* dst[1..5) */
    CHECK_OK(TVMArrayCopyFromTo(&from, &to, NULL));
    CHECK(dst[0] == -1 && dst[1] == 2 && dst[2] == 3 && dst[3] == 4 && dst[4] == 5 && dst[5] == -1);

    float dst2[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    DLTensor to2 = stack_tensor(dst2, s4, 1, kDLFloat, 32);
    to2.byte_offset = 4 * sizeof(float); /* dst2[4..8) */
    from.byte_offset = 0;
    CHECK_OK(TVMDeviceCopyDataFromTo(&from, &to2, NULL));
    CHECK(dst2[3] == -1 && dst2[4] == 0 && dst2[5] == 1 && dst2[6] == 2 && dst2[7] == 3);

    /* byte_offset in bytes copies */
    float got[4] = {0};
    from.byte_offset = 3 * sizeof(float);
    CHECK_OK(TVMArrayCopyToBytes(&from, got, sizeof got));
    CHECK(got[0] == 3 && got[3] == 6);
    float put[4] = {10, 11, 12, 13};
    CHECK_OK(TVMArrayCopyFromBytes(&to2, put, sizeof put));
    CHECK(dst2[3] == -1 && dst2[4] == 10 && dst2[7] == 13);

    /* into an NDArray from an offset stack tensor */
    TVMArrayHandle h = NULL;
    REQUIRE_OK(TVMArrayAlloc(s4, 1, kDLFloat, 32, 1, kDLCPU, 0, &h));
    from.byte_offset = 4 * sizeof(float);
    CHECK_OK(TVMArrayCopyFromTo(&from, h, NULL));
    CHECK(((float*)h->data)[0] == 4 && ((float*)h->data)[3] == 7);

    /* strided (non-compact) tensors are rejected with a clear message */
    int64_t s23[2] = {2, 3};
    int64_t colmajor[2] = {1, 2};
    float sbuf[6] = {0};
    DLTensor strided = stack_tensor(sbuf, s23, 2, kDLFloat, 32);
    strided.strides = colmajor;
    int64_t s6[1] = {6};
    float cbuf[6] = {0};
    DLTensor compact = stack_tensor(cbuf, s6, 1, kDLFloat, 32);
    CHECK_FAIL(TVMArrayCopyFromTo(&strided, &compact, NULL), "strided");
    CHECK_FAIL(TVMArrayCopyFromTo(&compact, &strided, NULL), "strided");
    CHECK_FAIL(TVMDeviceCopyDataFromTo(&strided, &compact, NULL), "strided");
    CHECK_FAIL(TVMArrayCopyFromBytes(&strided, cbuf, sizeof cbuf), "strided");
    CHECK_FAIL(TVMArrayCopyToBytes(&strided, cbuf, sizeof cbuf), "strided");
    /* explicit row-major strides count as compact; extent-1 dims are ignored */
    int64_t rowmajor[2] = {3, 1};
    strided.strides = rowmajor;
    CHECK_OK(TVMArrayCopyFromTo(&strided, &compact, NULL));
    int64_t s13[2] = {1, 6};
    int64_t odd[2] = {99, 1};
    DLTensor ext1 = stack_tensor(sbuf, s13, 2, kDLFloat, 32);
    ext1.strides = odd;
    CHECK_OK(TVMArrayCopyFromTo(&ext1, &compact, NULL));
    CHECK_OK(TVMArrayFree(h));
  }

  /* ---- unsupported device on the copy path ----------------------------------------------------- */
  {
    float a[4] = {0}, b[4] = {0};
    int64_t s4[1] = {4};
    DLTensor from = stack_tensor(a, s4, 1, kDLFloat, 32);
    DLTensor to = stack_tensor(b, s4, 1, kDLFloat, 32);
    to.device.device_type = kDLCUDA;
    CHECK_FAIL(TVMArrayCopyFromTo(&from, &to, NULL), "cuda");
    CHECK_FAIL(TVMDeviceCopyDataFromTo(&from, &to, NULL), "cuda");
    /* two different non-host devices cannot be copied between at all */
    from.device.device_type = kDLOpenCL;
    CHECK(TVMArrayCopyFromTo(&from, &to, NULL) == -1);
  }

  return tvm_test_summary("test_ndarray");
}
