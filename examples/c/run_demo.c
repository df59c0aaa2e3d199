/* Run the demo model (target/demo/demo_model.so) through the C API and print its prediction. */
#include <stdio.h>
#include <tvm_runtime.h>

static int check(int rc, const char* what) {
  if (rc != 0) fprintf(stderr, "%s: %s\n", what, TVMGetLastError());
  return rc;
}

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : "target/demo/demo_model.so";
  float pixels[16 * 16], scores[10];
  for (int i = 0; i < 16 * 16; ++i) pixels[i] = (float)(i % 16) / 15.0f;
  int64_t in_shape[4] = {1, 1, 16, 16}, out_shape[2] = {1, 10};
  DLTensor data = {pixels, {kDLCPU, 0}, 4, {kDLFloat, 32, 1}, in_shape, NULL, 0};
  DLTensor out = {scores, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, out_shape, NULL, 0};

  TVMModuleHandle factory;  /* export_library's .so: kernels, graph JSON and weights in one */
  if (check(TVMModLoadFromFile(path, "", &factory), path)) return 1;
  DLDevice cpu = {kDLCPU, 0};
  TVMGraphExecutor* g;
  if (check(TVMGraphExecutorCreateFromFactory(factory, &cpu, 1, &g), "create") ||
      check(TVMGraphExecutorSetInput(g, "data", &data), "set_input") ||  /* dtype, shape checked */
      check(TVMGraphExecutorRun(g), "run") ||
      check(TVMGraphExecutorGetOutput(g, 0, &out), "get_output"))  /* copied into scores */
    return 1;
  TVMGraphExecutorFree(g);
  TVMModFree(factory);

  int best = 0;
  float sum = 0;
  for (int k = 0; k < 10; ++k) {
    sum += scores[k];
    if (scores[k] > scores[best]) best = k;
  }
  printf("predicted class %d (p = %.4f; the 10 probabilities sum to %.4f)\n", best, scores[best], sum);
  return sum > 0.999f && sum < 1.001f ? 0 : 1;  /* the model ends in a softmax */
}
