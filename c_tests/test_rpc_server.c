/*
 * The RPC server's C entry point TVMRPCServerLoop (TVM's RPCServerLoop(sockfd)) serving four
 * sessions at once in one process, one per thread pair: each client thread speaks TVM 0.18's
 * protocol over a socket pair and runs 50 rounds of allocate, copy in, copy out, compare, free,
 * look up and free a global function; then an oversized packet ends a fifth session with an
 * Exception. Sessions share nothing, so the rounds never see each other's data (and TSan checks
 * the library's state between the sessions' threads).
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <tvm_runtime.h>
#include <unistd.h>

#include "tvm_test.h"

enum { THREADS = 4, ROUNDS = 50, NBYTES = 64 };

typedef struct {
  uint8_t buf[512];
  size_t n;
} packet_t;

static void put(packet_t* p, const void* data, size_t n) {
  memcpy(p->buf + p->n, data, n);
  p->n += n;
}
static void put_i32(packet_t* p, int32_t v) { put(p, &v, 4); }
static void put_u64(packet_t* p, uint64_t v) { put(p, &v, 8); }

static int io_all(int fd, void* data, size_t n, int writing) {
  uint8_t* b = data;
  while (n > 0) {
    ssize_t k = writing ? write(fd, b, n) : read(fd, b, n);
    if (k <= 0) return -1;
    b += k;
    n -= (size_t)k;
  }
  return 0;
}

static void send_packet(int fd, const packet_t* p) {
  uint64_t n = p->n;
  REQUIRE(io_all(fd, &n, 8, 1) == 0 && io_all(fd, (void*)p->buf, p->n, 1) == 0);
}

/* The next packet's body (code first) into body; its length. */
static uint64_t recv_packet(int fd, uint8_t* body, size_t cap) {
  uint64_t n = 0;
  REQUIRE(io_all(fd, &n, 8, 0) == 0);
  REQUIRE(n <= cap);
  REQUIRE(io_all(fd, body, n, 0) == 0);
  return n;
}

static int32_t i32_at(const uint8_t* b, size_t at) {
  int32_t v;
  memcpy(&v, b + at, 4);
  return v;
}
static uint64_t u64_at(const uint8_t* b, size_t at) {
  uint64_t v;
  memcpy(&v, b + at, 8);
  return v;
}

/* A one-NULL Return: code 4, one value, type code 4. */
static void expect_void(int fd) {
  uint8_t b[64];
  CHECK(recv_packet(fd, b, sizeof b) == 12 && i32_at(b, 0) == 4 && i32_at(b, 4) == 1 && i32_at(b, 8) == 4);
}

static void put_tensor(packet_t* p, uint64_t data) {
  uint8_t dtype[4] = {2, 32, 1, 0};
  put_u64(p, data);
  put_i32(p, 1); /* device type CPU */
  put_i32(p, 0);
  put_i32(p, 1); /* ndim */
  put(p, dtype, 4);
  put_u64(p, NBYTES / 4); /* shape[0] */
  put_u64(p, 0);          /* byte offset */
}

static void init_server(int fd) {
  packet_t p = {.n = 0};
  put_i32(&p, 2);
  put_u64(&p, 5);
  put(&p, "0.8.0", 5);
  put_i32(&p, 0);
  send_packet(fd, &p);
  /* A Return of no value: InitServer's reply is the same for TVM 0.18 and apache-tvm 0.2x hosts. */
  uint8_t b[64];
  CHECK(recv_packet(fd, b, sizeof b) == 8 && i32_at(b, 0) == 4 && i32_at(b, 4) == 0);
}

static void one_round(int fd, int seed) {
  uint8_t b[256], data[NBYTES], dtype[8] = {2, 32, 1, 0, 0, 0, 0, 0};
  packet_t p = {.n = 0};
  /* DevAllocData(cpu, NBYTES, 64, float32) -> a buffer address */
  put_i32(&p, 13);
  put_i32(&p, 4);
  int32_t codes[4] = {6, 0, 0, 5};
  put(&p, codes, 16);
  put_i32(&p, 1);
  put_i32(&p, 0);
  put_u64(&p, NBYTES);
  put_u64(&p, 64);
  put(&p, dtype, 8);
  send_packet(fd, &p);
  REQUIRE(recv_packet(fd, b, sizeof b) == 20 && i32_at(b, 0) == 4 && i32_at(b, 8) == 3);
  uint64_t ptr = u64_at(b, 12);
  CHECK(ptr != 0);
  /* CopyToRemote, then CopyFromRemote: the same bytes come back */
  for (int i = 0; i < NBYTES; i++) data[i] = (uint8_t)(seed * 31 + i);
  p.n = 0;
  put_i32(&p, 7);
  put_tensor(&p, ptr);
  put_u64(&p, NBYTES);
  put(&p, data, NBYTES);
  send_packet(fd, &p);
  expect_void(fd);
  p.n = 0;
  put_i32(&p, 6);
  put_tensor(&p, ptr);
  put_u64(&p, NBYTES);
  send_packet(fd, &p);
  CHECK(recv_packet(fd, b, sizeof b) == 4 + NBYTES && i32_at(b, 0) == 8);
  CHECK(memcmp(b + 4, data, NBYTES) == 0);
  /* DevFreeData(cpu, ptr) */
  p.n = 0;
  put_i32(&p, 14);
  put_i32(&p, 2);
  int32_t free_codes[2] = {6, 3};
  put(&p, free_codes, 8);
  put_i32(&p, 1);
  put_i32(&p, 0);
  put_u64(&p, ptr);
  send_packet(fd, &p);
  expect_void(fd);
  /* GetGlobalFunc("runtime.RPCTimeEvaluator"), then FreeHandle(it, kTVMPackedFuncHandle) */
  const char* name = "runtime.RPCTimeEvaluator";
  p.n = 0;
  put_i32(&p, 9);
  put_i32(&p, 1);
  put_i32(&p, 11);
  put_u64(&p, strlen(name));
  put(&p, name, strlen(name));
  send_packet(fd, &p);
  REQUIRE(recv_packet(fd, b, sizeof b) == 20 && i32_at(b, 8) == 3);
  uint64_t f = u64_at(b, 12);
  CHECK(f != 0);
  p.n = 0;
  put_i32(&p, 10);
  put_i32(&p, 2);
  int32_t fh_codes[2] = {3, 0};
  put(&p, fh_codes, 8);
  put_u64(&p, f);
  put_u64(&p, 10);
  send_packet(fd, &p);
  expect_void(fd);
}

static void* serve(void* arg) {
  CHECK_OK(TVMRPCServerLoop((int)(intptr_t)arg));
  return NULL;
}

static void* client(void* arg) {
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  pthread_t server;
  REQUIRE(pthread_create(&server, NULL, serve, (void*)(intptr_t)sv[1]) == 0);
  init_server(sv[0]);
  for (int r = 0; r < ROUNDS; r++) one_round(sv[0], (int)(intptr_t)arg * ROUNDS + r);
  packet_t p = {.n = 0};
  put_i32(&p, 1); /* Shutdown */
  send_packet(sv[0], &p);
  pthread_join(server, NULL);
  close(sv[0]);
  return NULL;
}

int main(void) {
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) REQUIRE(pthread_create(&t[i], NULL, client, (void*)(intptr_t)i) == 0);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);

  /* A packet over the limit: an Exception, then the session ends (the loop returns). */
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  pthread_t server;
  REQUIRE(pthread_create(&server, NULL, serve, (void*)(intptr_t)sv[1]) == 0);
  init_server(sv[0]);
  uint64_t huge = (uint64_t)1 << 62;
  REQUIRE(io_all(sv[0], &huge, 8, 1) == 0);
  uint8_t b[512];
  uint64_t n = recv_packet(sv[0], b, sizeof b);
  CHECK(n > 20 && i32_at(b, 0) == 5);
  pthread_join(server, NULL);
  close(sv[0]);
  CHECK_FAIL(TVMRPCServerLoop(-1), "sockfd");
  return tvm_test_summary("test_rpc_server");
}
