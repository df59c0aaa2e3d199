/*
 * One TVM 0.18 graph model built for OpenCL, timed through TVM's C API alone on opencl:0, so the
 * same binary runs on TVM 0.18's libtvm_runtime.so and on this runtime's (benches/opencl/
 * tvm018_opencl.sh picks one with LD_LIBRARY_PATH).
 *
 *   graph_latency MODEL_DIR INPUT_NAME LABEL
 *
 * MODEL_DIR holds packed.so (graph, params and kernels), graph.json (to count the kernels) and
 * input_<INPUT_NAME>.bin. Prints one line: "<model> <label> <run+sync us> <us per kernel launch>":
 * the median over batches of a run followed by TVMSynchronize, and the host time of 200 runs
 * queued without waiting, per kernel.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <tvm/runtime/c_runtime_api.h>

#define CHECK(call)                                                              \
  do {                                                                           \
    if ((call) != 0) {                                                           \
      fprintf(stderr, "%s failed: %s\n", #call, TVMGetLastError());              \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static char* read_file(const char* dir, const char* name, size_t* size) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE* f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  *size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  char* data = malloc(*size + 1);
  if (fread(data, 1, *size, f) != *size) exit(1);
  data[*size] = 0;
  fclose(f);
  return data;
}

static TVMFunctionHandle function(TVMModuleHandle m, const char* name) {
  TVMFunctionHandle f = NULL;
  CHECK(TVMModGetFunction(m, name, 0, &f));
  if (!f) {
    fprintf(stderr, "no function %s\n", name);
    exit(1);
  }
  return f;
}

static void call0(TVMFunctionHandle f) {
  TVMValue ret;
  int code;
  CHECK(TVMFuncCall(f, NULL, NULL, 0, &ret, &code));
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s MODEL_DIR INPUT_NAME LABEL\n", argv[0]);
    return 2;
  }
  const char *dir = argv[1], *input = argv[2], *label = argv[3];
  const char* model = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
  size_t size;
  char* json = read_file(dir, "graph.json", &size);
  int kernels = 0;
  for (char* p = json; (p = strstr(p, "\"tvm_op\"")); ++p) ++kernels;
  char path[1024], file[256];
  snprintf(path, sizeof path, "%s/packed.so", dir);
  TVMModuleHandle lib, gm;
  CHECK(TVMModLoadFromFile(path, "", &lib));
  TVMValue arg, ret;
  int code = kDLDevice, ret_code;
  arg.v_device.device_type = kDLOpenCL;
  arg.v_device.device_id = 0;
  CHECK(TVMFuncCall(function(lib, "default"), &arg, &code, 1, &ret, &ret_code));
  gm = ret.v_handle;
  TVMFunctionHandle run = function(gm, "run");

  snprintf(file, sizeof file, "input_%s.bin", input);
  char* x = read_file(dir, file, &size);
  TVMValue in_arg;
  int in_code = kTVMStr;
  in_arg.v_str = input;
  CHECK(TVMFuncCall(function(gm, "get_input"), &in_arg, &in_code, 1, &ret, &ret_code));
  DLTensor* device_input = ret.v_handle;
  CHECK(TVMArrayCopyFromBytes(device_input, x, size));

  for (int i = 0; i < 20; ++i) call0(run);
  CHECK(TVMSynchronize(kDLOpenCL, 0, NULL));
  enum { BATCHES = 15, PER_BATCH = 20, QUEUED = 200 };
  double lat[BATCHES];
  for (int b = 0; b < BATCHES; ++b) {
    double t0 = now_us();
    for (int i = 0; i < PER_BATCH; ++i) {
      call0(run);
      CHECK(TVMSynchronize(kDLOpenCL, 0, NULL));
    }
    lat[b] = (now_us() - t0) / PER_BATCH;
  }
  qsort(lat, BATCHES, sizeof lat[0], cmp);
  double t0 = now_us();
  for (int i = 0; i < QUEUED; ++i) call0(run);
  double queued = (now_us() - t0) / QUEUED / (kernels ? kernels : 1);
  CHECK(TVMSynchronize(kDLOpenCL, 0, NULL));
  printf("%s %s %.2f %.3f\n", model, label, lat[BATCHES / 2], queued);
  CHECK(TVMArrayFree(device_input));
  CHECK(TVMModFree(gm));
  CHECK(TVMModFree(lib));
  free(x);
  free(json);
  return 0;
}
