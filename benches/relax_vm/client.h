/* The measuring half shared by the two Relax VM bench clients (ours.c: this runtime's C API;
 * peer.c: apache-tvm's own runtime through the tvm-ffi C API). Each client supplies three
 * functions; this file reads the inputs, times, and prints one JSON line.
 *
 * usage: <client> LIB FUNC SECONDS THREADS FILE SHAPE [FILE SHAPE ...]
 * (SECONDS 0: load, one call and exit, for the harness to time the whole process)
 *   SHAPE is like 4x32 (float32 inputs); THREADS > 1 measures calls/s from that many threads
 *   calling the same function at once (only where the runtime allows it). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define MAX_INPUTS 8
#define MAX_DIMS 6

typedef struct {
  int ndim;
  int64_t shape[MAX_DIMS];
  float* data;
  size_t count;
} input_t;

/* what a client implements */
static void client_init(void); /* the runtime's one-time initialization, where it runs in main */
static void* client_load(const char* lib, const char* func, input_t* inputs, int n);
/* a context calling the function `loaded` calls, on arrays of its own holding `inputs` */
static void* client_bind(void* loaded, input_t* inputs, int n);
static void client_call(void* ctx); /* one call of the function on the inputs; exits on error */
static const char* client_name(void);

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void die(const char* what) {
  fprintf(stderr, "%s: %s\n", client_name(), what);
  exit(1);
}

static void read_input(input_t* in, const char* file, const char* shape) {
  in->ndim = 0;
  in->count = 1;
  for (const char* p = shape; *p; ) {
    char* end;
    long long d = strtoll(p, &end, 10);
    if (end == p || in->ndim == MAX_DIMS) die("bad shape");
    in->shape[in->ndim++] = d;
    in->count *= (size_t)d;
    p = *end == 'x' ? end + 1 : end;
    if (*end && *end != 'x') die("bad shape");
  }
  in->data = malloc(in->count * sizeof(float));
  FILE* f = fopen(file, "rb");
  if (!f || fread(in->data, sizeof(float), in->count, f) != in->count) die("cannot read an input file");
  fclose(f);
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

typedef struct {
  void* ctx;
  double until;
  long calls;
} worker_t;

static void* worker(void* arg) {
  worker_t* w = arg;
  while (now_us() < w->until) {
    for (int i = 0; i < 32; i++) client_call(w->ctx);
    w->calls += 32;
  }
  return NULL;
}

/* calls/s of `threads` threads calling the function at once, each on arrays of its own (as
 * concurrent requests have): threads sharing one array would all write its reference count */
static double throughput(void* ctx, input_t* inputs, int n, int threads, double seconds) {
  pthread_t tid[64];
  worker_t w[64];
  if (threads > 64) die("at most 64 threads");
  for (int i = 0; i < threads; i++) w[i] = (worker_t){client_bind(ctx, inputs, n), 0, 0};
  double start = now_us(), until = start + seconds * 1e6;
  for (int i = 0; i < threads; i++) {
    w[i].until = until;
    pthread_create(&tid[i], NULL, worker, &w[i]);
  }
  long calls = 0;
  for (int i = 0; i < threads; i++) {
    pthread_join(tid[i], NULL);
    calls += w[i].calls;
  }
  return calls / ((now_us() - start) / 1e6);
}

int main(int argc, char** argv) {
  if (argc < 5 || (argc - 5) % 2 || argc - 5 > 2 * MAX_INPUTS) die("usage: LIB FUNC SECONDS THREADS FILE SHAPE ...");
  double seconds = atof(argv[3]);
  int threads = atoi(argv[4]);
  int n = (argc - 5) / 2;
  input_t inputs[MAX_INPUTS];
  for (int i = 0; i < n; i++) read_input(&inputs[i], argv[5 + 2 * i], argv[6 + 2 * i]);

  /* load: the file to the first call done, on an initialized runtime (TVM's initializers run
   * before main; ours at the first API call, timed apart as init) */
  double ti = now_us();
  client_init();
  double t0 = now_us(), init_us = t0 - ti;
  void* ctx = client_load(argv[1], argv[2], inputs, n);
  client_call(ctx);
  double load_us = now_us() - t0;
  if (seconds <= 0) { /* load only: the harness times the whole process */
    printf("{\"client\": \"%s\", \"init_us\": %.1f, \"load_us\": %.1f}\n", client_name(), init_us, load_us);
    return 0;
  }

  /* per-call latency: batches of calls, each batch about 1 ms, for `seconds` */
  long per_batch = 1;
  for (;;) {
    double t = now_us();
    for (long i = 0; i < per_batch; i++) client_call(ctx);
    if (now_us() - t > 1000 || per_batch > (1 << 20)) break;
    per_batch *= 2;
  }
  static double samples[100000];
  int ns = 0;
  double end = now_us() + seconds * 1e6;
  while (now_us() < end && ns < 100000) {
    double t = now_us();
    for (long i = 0; i < per_batch; i++) client_call(ctx);
    samples[ns++] = (now_us() - t) / per_batch;
  }
  qsort(samples, ns, sizeof(double), cmp_double);
  double tput = threads > 0 ? throughput(ctx, inputs, n, threads, seconds) : 0;
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("{\"client\": \"%s\", \"init_us\": %.1f, \"load_us\": %.1f, \"call_us\": %.3f, \"call_us_p90\": %.3f, "
         "\"samples\": %d, \"threads\": %d, \"calls_per_s\": %.1f, \"maxrss_kb\": %ld}\n",
         client_name(), init_us, load_us, samples[ns / 2], samples[ns * 9 / 10], ns, threads, tput, ru.ru_maxrss);
  return 0;
}
