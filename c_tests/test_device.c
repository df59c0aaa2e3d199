/*
 * Raw device memory and streams on the CPU device, and errors for devices this runtime does not
 * provide.
 */
#include <stdint.h>
#include <tvm_runtime.h>

#include "tvm_test.h"

static int aligned(const void* p, size_t a) { return ((uintptr_t)p % a) == 0; }

static DLTensor flat_tensor(void* data, int64_t* shape, DLDevice dev) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device = dev;
  t.ndim = 1;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  return t;
}

int main(void) {
  DLDevice cpu = {kDLCPU, 0};
  DLDevice cuda = {kDLCUDA, 0};
  DLDataType f32 = {kDLFloat, 32, 1};
  DLDataType u8 = {kDLUInt, 8, 1};

  /* ---- TVMDeviceAllocDataSpace honours the alignment --------------------------------------- */
  {
    size_t aligns[] = {1, 8, 16, 64, 256, 4096, 65536};
    for (size_t i = 0; i < sizeof aligns / sizeof aligns[0]; ++i) {
      void* p = NULL;
      if (!CHECK_OK(TVMDeviceAllocDataSpace(cpu, 1000, aligns[i], u8, &p))) continue;
      CHECK(p != NULL);
      if (!CHECK(aligned(p, aligns[i]))) fprintf(stderr, "    alignment %zu\n", aligns[i]);
      memset(p, 0xAB, 1000); /* writable, all of it */
      CHECK(((unsigned char*)p)[999] == 0xAB);
      CHECK_OK(TVMDeviceFreeDataSpace(cpu, p));
    }
    void* p = NULL;
    CHECK_OK(TVMDeviceAllocDataSpace(cpu, 0, 64, u8, &p)); /* zero bytes: fine */
    CHECK_OK(TVMDeviceFreeDataSpace(cpu, p));
    CHECK(TVMDeviceAllocDataSpace(cpu, 64, 48, u8, &p) == -1); /* not a power of two */
    CHECK_OK(TVMDeviceFreeDataSpace(cpu, NULL));
  }

  /* ---- WithScope -------------------------------------------------------------------------------- */
  {
    int64_t shape[2] = {3, 5};
    void* p = NULL;
    CHECK_OK(TVMDeviceAllocDataSpaceWithScope(cpu, 2, shape, f32, NULL, &p));
    CHECK(p != NULL && aligned(p, 64));
    if (p) {
      memset(p, 0, 60);
      CHECK_OK(TVMDeviceFreeDataSpace(cpu, p));
    }
    p = NULL;
    CHECK_OK(TVMDeviceAllocDataSpaceWithScope(cpu, 2, shape, f32, "global", &p));
    CHECK(p != NULL && aligned(p, 64));
    if (p) CHECK_OK(TVMDeviceFreeDataSpace(cpu, p));
    p = NULL;
    CHECK_OK(TVMDeviceAllocDataSpaceWithScope(cpu, 2, shape, f32, "", &p));
    CHECK(p != NULL && aligned(p, 64));
    if (p) CHECK_OK(TVMDeviceFreeDataSpace(cpu, p));
    p = NULL;
    CHECK_OK(TVMDeviceAllocDataSpaceWithScope(cpu, 0, NULL, f32, "global", &p)); /* scalar */
    CHECK(p != NULL);
    if (p) CHECK_OK(TVMDeviceFreeDataSpace(cpu, p));
    p = NULL;
    CHECK_FAIL(TVMDeviceAllocDataSpaceWithScope(cpu, 2, shape, f32, "texture", &p), "texture");
    CHECK(p == NULL);
    CHECK_FAIL(TVMDeviceAllocDataSpaceWithScope(cpu, 2, shape, f32, "global.texture", &p),
               "global.texture");
    CHECK_FAIL(TVMDeviceAllocDataSpaceWithScope(cuda, 2, shape, f32, "global", &p), "cuda");
  }

  /* ---- TVMDeviceCopyDataFromTo over allocated spaces ------------------------------------------ */
  {
    int64_t shape[1] = {16};
    void* a = NULL;
    void* b = NULL;
    REQUIRE_OK(TVMDeviceAllocDataSpace(cpu, 64, 64, f32, &a));
    REQUIRE_OK(TVMDeviceAllocDataSpace(cpu, 64, 64, f32, &b));
    for (int i = 0; i < 16; ++i) ((float*)a)[i] = (float)i * 1.5f;
    memset(b, 0, 64);
    DLTensor ta = flat_tensor(a, shape, cpu);
    DLTensor tb = flat_tensor(b, shape, cpu);
    CHECK_OK(TVMDeviceCopyDataFromTo(&ta, &tb, NULL));
    CHECK(memcmp(a, b, 64) == 0);
    CHECK(((float*)b)[15] == 22.5f);
    /* with a stream */
    TVMStreamHandle s = NULL;
    CHECK_OK(TVMStreamCreate(kDLCPU, 0, &s));
    memset(b, 0, 64);
    CHECK_OK(TVMDeviceCopyDataFromTo(&ta, &tb, s));
    CHECK_OK(TVMSynchronize(kDLCPU, 0, s));
    CHECK(((float*)b)[7] == 10.5f);
    CHECK_OK(TVMStreamFree(kDLCPU, 0, s));
    /* size mismatch */
    int64_t shape8[1] = {8};
    DLTensor tc = flat_tensor(b, shape8, cpu);
    CHECK_FAIL(TVMDeviceCopyDataFromTo(&ta, &tc, NULL), "mismatch");
    /* CPU <-> CUDA needs the CUDA device API */
    DLTensor tcuda = flat_tensor(b, shape, cuda);
    CHECK_FAIL(TVMDeviceCopyDataFromTo(&ta, &tcuda, NULL), "cuda");
    CHECK_FAIL(TVMDeviceCopyDataFromTo(&tcuda, &ta, NULL), "cuda");
    CHECK_OK(TVMDeviceFreeDataSpace(cpu, a));
    CHECK_OK(TVMDeviceFreeDataSpace(cpu, b));
  }

  /* ---- streams ------------------------------------------------------------------------------- */
  {
    TVMStreamHandle s1 = NULL, s2 = NULL;
    CHECK_OK(TVMStreamCreate(kDLCPU, 0, &s1));
    CHECK_OK(TVMStreamCreate(kDLCPU, 0, &s2));
    CHECK(s1 != NULL && s2 != NULL && s1 != s2);
    CHECK_OK(TVMSetStream(kDLCPU, 0, s1));
    CHECK_OK(TVMSynchronize(kDLCPU, 0, s1));
    CHECK_OK(TVMStreamStreamSynchronize(kDLCPU, 0, s1, s2));
    CHECK_OK(TVMStreamStreamSynchronize(kDLCPU, 0, s2, s1));
    CHECK_OK(TVMSetStream(kDLCPU, 0, NULL));
    CHECK_OK(TVMSynchronize(kDLCPU, 0, NULL));
    CHECK_OK(TVMStreamStreamSynchronize(kDLCPU, 0, NULL, NULL));
    CHECK_OK(TVMStreamStreamSynchronize(kDLCPU, 0, s1, NULL));
    /* an array copy on a stream */
    int64_t shape[1] = {4};
    TVMArrayHandle x = NULL, y = NULL;
    REQUIRE_OK(TVMArrayAlloc(shape, 1, kDLFloat, 32, 1, kDLCPU, 0, &x));
    REQUIRE_OK(TVMArrayAlloc(shape, 1, kDLFloat, 32, 1, kDLCPU, 0, &y));
    float v[4] = {1, 2, 3, 4}, back[4] = {0};
    CHECK_OK(TVMArrayCopyFromBytes(x, v, sizeof v));
    CHECK_OK(TVMArrayCopyFromTo(x, y, s2));
    CHECK_OK(TVMSynchronize(kDLCPU, 0, s2));
    CHECK_OK(TVMArrayCopyToBytes(y, back, sizeof back));
    CHECK(memcmp(v, back, sizeof v) == 0);
    CHECK_OK(TVMArrayFree(x));
    CHECK_OK(TVMArrayFree(y));

    CHECK_OK(TVMStreamFree(kDLCPU, 0, s1));
    CHECK(TVMStreamFree(kDLCPU, 0, s1) == -1); /* twice */
    CHECK(TVMGetLastError() != NULL);
    /* a freed stream is no longer usable */
    CHECK(TVMSetStream(kDLCPU, 0, s1) == -1);
    CHECK(TVMSynchronize(kDLCPU, 0, s1) == -1);
    /* s2 is unaffected */
    CHECK_OK(TVMSynchronize(kDLCPU, 0, s2));
    CHECK_OK(TVMStreamFree(kDLCPU, 0, s2));
    CHECK_OK(TVMStreamFree(kDLCPU, 0, NULL)); /* the default stream: nothing to free */

    /* a bogus stream pointer is rejected, not dereferenced */
    int not_a_stream = 0;
    TVMStreamHandle bogus = &not_a_stream;
    CHECK_FAIL(TVMSetStream(kDLCPU, 0, bogus), "stream");
    CHECK_FAIL(TVMSynchronize(kDLCPU, 0, bogus), "stream");
    CHECK_FAIL(TVMStreamStreamSynchronize(kDLCPU, 0, bogus, NULL), "stream");
    CHECK_FAIL(TVMStreamFree(kDLCPU, 0, bogus), "stream");
    CHECK(not_a_stream == 0);
    {
      float a[2] = {1, 2}, b[2] = {0, 0};
      int64_t s2shape[1] = {2};
      DLTensor ta = flat_tensor(a, s2shape, cpu);
      DLTensor tb = flat_tensor(b, s2shape, cpu);
      CHECK_FAIL(TVMDeviceCopyDataFromTo(&ta, &tb, bogus), "stream");
      CHECK(b[0] == 0);
    }
  }

  /* ---- CUDA (device type 2) is not provided: errors name it ----------------------------------- */
  {
    void* p = NULL;
    TVMStreamHandle s = NULL;
    CHECK_FAIL(TVMDeviceAllocDataSpace(cuda, 64, 64, f32, &p), "cuda");
    CHECK(p == NULL);
    CHECK_FAIL(TVMDeviceFreeDataSpace(cuda, NULL), "cuda");
    CHECK_FAIL(TVMStreamCreate(kDLCUDA, 0, &s), "cuda");
    CHECK_FAIL(TVMStreamFree(kDLCUDA, 0, NULL), "cuda");
    CHECK_FAIL(TVMSetStream(kDLCUDA, 0, NULL), "cuda");
    CHECK_FAIL(TVMSynchronize(kDLCUDA, 0, NULL), "cuda");
    CHECK_FAIL(TVMStreamStreamSynchronize(kDLCUDA, 0, NULL, NULL), "cuda");
    /* other unknown device types fail too, without crashing */
    CHECK(TVMSynchronize(99, 0, NULL) == -1);
    CHECK(TVMSynchronize(-1, 0, NULL) == -1);
    CHECK(TVMStreamCreate(1000, 0, &s) == -1);
  }

  return tvm_test_summary("test_device");
}
