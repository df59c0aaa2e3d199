/* The bench's floor: a Triton backend ("identity") answering each request with its first input
 * copied to an output named "output_0" (as the Relax mlp's), with per-request statistics. It does the least a backend can, so a model served by it measures
 * Triton's own overhead. Built by benches/triton/bench.py with cc against triton/include. */
#include <stdint.h>
#include <string.h>
#include <time.h>

/* The headers declare their structs without typedefs (they are C++-first). */
#define OPAQUE(name) typedef struct name name;
OPAQUE(TRITONBACKEND_Backend) OPAQUE(TRITONBACKEND_BackendAttribute) OPAQUE(TRITONBACKEND_Batcher)
OPAQUE(TRITONBACKEND_Input) OPAQUE(TRITONBACKEND_MemoryManager) OPAQUE(TRITONBACKEND_Model)
OPAQUE(TRITONBACKEND_ModelInstance) OPAQUE(TRITONBACKEND_ModelInstanceResponseStatistics)
OPAQUE(TRITONBACKEND_Output) OPAQUE(TRITONBACKEND_Request) OPAQUE(TRITONBACKEND_Response)
OPAQUE(TRITONBACKEND_ResponseFactory) OPAQUE(TRITONBACKEND_State) OPAQUE(TRITONSERVER_BufferAttributes)
OPAQUE(TRITONSERVER_Error) OPAQUE(TRITONSERVER_InferenceRequest) OPAQUE(TRITONSERVER_InferenceResponse)
OPAQUE(TRITONSERVER_InferenceTrace) OPAQUE(TRITONSERVER_Message) OPAQUE(TRITONSERVER_Metric)
OPAQUE(TRITONSERVER_MetricArgs) OPAQUE(TRITONSERVER_MetricFamily) OPAQUE(TRITONSERVER_Metrics)
OPAQUE(TRITONSERVER_Parameter) OPAQUE(TRITONSERVER_ResponseAllocator) OPAQUE(TRITONSERVER_Server)
OPAQUE(TRITONSERVER_ServerOptions)
#include "triton/core/tritonbackend.h"

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* The first input copied to output_0, of the same type and shape. */
static TRITONSERVER_Error* answer(TRITONBACKEND_Request* request, TRITONBACKEND_Response* response) {
  TRITONBACKEND_Input* input;
  TRITONSERVER_Error* err = TRITONBACKEND_RequestInputByIndex(request, 0, &input);
  if (err) return err;
  const char* name;
  TRITONSERVER_DataType dtype;
  const int64_t* shape;
  uint32_t dims, buffers;
  uint64_t bytes;
  err = TRITONBACKEND_InputProperties(input, &name, &dtype, &shape, &dims, &bytes, &buffers);
  if (err) return err;
  TRITONBACKEND_Output* output;
  err = TRITONBACKEND_ResponseOutput(response, &output, "output_0", dtype, shape, dims);
  if (err) return err;
  void* dst;
  TRITONSERVER_MemoryType mem = TRITONSERVER_MEMORY_CPU;
  int64_t mem_id = 0;
  err = TRITONBACKEND_OutputBuffer(output, &dst, bytes, &mem, &mem_id);
  if (err) return err;
  uint64_t at = 0;
  for (uint32_t b = 0; b < buffers; ++b) {
    const void* src;
    uint64_t n;
    err = TRITONBACKEND_InputBuffer(input, b, &src, &n, &mem, &mem_id);
    if (err) return err;
    memcpy((char*)dst + at, src, n);
    at += n;
  }
  return NULL;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance* instance,
                                                       TRITONBACKEND_Request** requests,
                                                       const uint32_t count) {
  for (uint32_t r = 0; r < count; ++r) {
    uint64_t start = now_ns();
    TRITONBACKEND_Response* response;
    TRITONSERVER_Error* err = TRITONBACKEND_ResponseNew(&response, requests[r]);
    if (!err) {
      TRITONSERVER_Error* failed = answer(requests[r], response);
      int ok = failed == NULL;
      /* Triton takes over `failed` with the response. */
      err = TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, failed);
      if (!err && !ok) err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "identity failed");
    }
    uint64_t end = now_ns();
    TRITONBACKEND_ModelInstanceReportStatistics(instance, requests[r], err == NULL, start, start, end, end);
    if (err) TRITONSERVER_ErrorDelete(err);
    TRITONBACKEND_RequestRelease(requests[r], TRITONSERVER_REQUEST_RELEASE_ALL);
  }
  return NULL;
}
