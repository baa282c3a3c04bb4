/*===- fake_cuda.c - A counting stand-in for the CUDA driver --------------===//
 *
 * A libcuda.so.1 for the runtime's call-count tests (CallCountTest.cpp):
 * every driver entry point the runtime resolves (runtime/CudaDriver.h's
 * KINA_CUDA_DRIVER_API, plus cuPointerGetAttributes and
 * cuMemPrefetchAsync_v2 that it looks up with driverSymbol) with enough
 * behaviour to run a kinac-compiled `kina_<fn>` without a GPU, and a
 * counter per entry point, so a test can assert how many driver calls one
 * steady-state call makes. Nothing runs on a device: launches are checked
 * and counted, not executed.
 *
 * What it models (and checks, so a runtime that skips a needed call fails):
 *   - $KINA_FAKE_CUDA_DEVICES devices (default 2), one primary context
 *     each; a per-thread current context (cuCtxSetCurrent/GetCurrent);
 *   - memory (cuMemAlloc: device memory of the current context's device;
 *     cuMemAllocManaged: managed) from the host heap, recorded, so
 *     cuPointerGetAttribute(s) answer memory type, managed flag, device
 *     ordinal and context, and 0 / CUDA_ERROR_INVALID_VALUE for pointers
 *     it did not hand out. A freed block of the same size is handed out
 *     again, most recent first (the address reuse a real allocator shows);
 *   - modules per context, functions per module, streams per context:
 *     cuLaunchKernel, cuModuleGetFunction, the stream calls and the
 *     allocations fail with CUDA_ERROR_INVALID_CONTEXT without a current
 *     context, and a launch fails with CUDA_ERROR_INVALID_HANDLE when the
 *     function or the stream belongs to another context than the current
 *     one (the real driver's behaviour), so a runtime that forgets a
 *     context switch is caught.
 * Control functions (fake_cuda_*) are exported for the tests; they look
 * them up with dlsym in the same library the runtime loaded.
 *
 *===----------------------------------------------------------------------===*/
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum {
  SUCCESS = 0,
  INVALID_VALUE = 1,
  OUT_OF_MEMORY = 2,
  INVALID_DEVICE = 101,
  INVALID_CONTEXT = 201,
  INVALID_HANDLE = 400,
  NOT_FOUND = 500
};

/* --- Counters ------------------------------------------------------------ */

#define FAKE_ENTRIES(X)                                                        \
  X(cuInit)                                                                    \
  X(cuDriverGetVersion)                                                        \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuDevicePrimaryCtxRelease_v2)                                              \
  X(cuCtxSetCurrent)                                                           \
  X(cuCtxGetCurrent)                                                           \
  X(cuMemGetInfo_v2)                                                           \
  X(cuMemAllocManaged)                                                         \
  X(cuMemFree_v2)                                                              \
  X(cuPointerGetAttribute)                                                     \
  X(cuPointerGetAttributes)                                                    \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)                                                          \
  X(cuModuleLoadData)                                                          \
  X(cuModuleLoadDataEx)                                                        \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuFuncSetAttribute)                                                        \
  X(cuLaunchKernel)                                                            \
  X(cuStreamCreate)                                                            \
  X(cuStreamDestroy_v2)                                                        \
  X(cuStreamSynchronize)                                                       \
  X(cuStreamWaitEvent)                                                         \
  X(cuEventCreate)                                                             \
  X(cuEventDestroy_v2)                                                         \
  X(cuEventRecord)                                                             \
  X(cuEventSynchronize)                                                        \
  X(cuMemAlloc_v2)                                                             \
  X(cuMemcpyAsync)                                                             \
  X(cuMemsetD32Async)                                                          \
  X(cuMemsetD16Async)                                                          \
  X(cuMemPrefetchAsync_v2)

#define FAKE_ENUM(name) E_##name,
enum { FAKE_ENTRIES(FAKE_ENUM) E_COUNT };
#undef FAKE_ENUM
#define FAKE_NAME(name) #name,
static const char *const entryNames[] = {FAKE_ENTRIES(FAKE_NAME)};
#undef FAKE_NAME

static atomic_long counts[E_COUNT];

/* The order of the calls since the last reset (the first kTraceLength). */
enum { kTraceLength = 256 };
static atomic_int trace[kTraceLength];
static atomic_int traceLength;

static void count(int entry) {
  atomic_fetch_add(&counts[entry], 1);
  int at = atomic_fetch_add(&traceLength, 1);
  if (at < kTraceLength)
    atomic_store(&trace[at], entry);
}

/* --- Devices and contexts ------------------------------------------------ */

enum { kMaxDevices = 8 };
struct Context {
  int device;
};
static struct Context contexts[kMaxDevices];
static int deviceCount = 2;
static _Thread_local struct Context *current;

static int validDevice(int device) {
  return device >= 0 && device < deviceCount;
}

/* --- Memory -------------------------------------------------------------- */

struct Block {
  void *base;
  size_t bytes;
  int device;
  int managed;
  int live; /* 0: freed, kept for reuse at the same address */
  struct Block *next;
};
static pthread_mutex_t memoryLock = PTHREAD_MUTEX_INITIALIZER;
static struct Block *blocks;

static CUresult allocate(CUdeviceptr *result, size_t bytes, int managed) {
  if (!result || bytes == 0)
    return INVALID_VALUE;
  if (!current)
    return INVALID_CONTEXT;
  pthread_mutex_lock(&memoryLock);
  struct Block *reuse = NULL;
  for (struct Block *b = blocks; b; b = b->next)
    if (!b->live && b->bytes == bytes) {
      reuse = b;
      break;
    }
  if (!reuse) {
    reuse = calloc(1, sizeof(*reuse));
    void *base = NULL;
    if (!reuse || posix_memalign(&base, 256, bytes) != 0) {
      free(reuse);
      pthread_mutex_unlock(&memoryLock);
      return OUT_OF_MEMORY;
    }
    reuse->base = base;
    reuse->bytes = bytes;
    reuse->next = blocks;
    blocks = reuse;
  }
  reuse->live = 1;
  reuse->managed = managed;
  reuse->device = current->device;
  *result = (CUdeviceptr)(uintptr_t)reuse->base;
  pthread_mutex_unlock(&memoryLock);
  return SUCCESS;
}

/* The live block holding `address`, or null; call under memoryLock. */
static struct Block *findBlock(CUdeviceptr address) {
  for (struct Block *b = blocks; b; b = b->next) {
    uintptr_t base = (uintptr_t)b->base;
    if (b->live && address >= base && address < base + b->bytes)
      return b;
  }
  return NULL;
}

/* The attribute `attribute` (cuda.h's numbering) of `address` into `data`;
 * known: whether the driver knows the pointer. */
static void pointerAttribute(int attribute, void *data, CUdeviceptr address,
                             int *known) {
  pthread_mutex_lock(&memoryLock);
  struct Block *b = findBlock(address);
  *known = b != NULL;
  switch (attribute) {
  case 1: /* CONTEXT */
    *(void **)data = b ? (void *)&contexts[b->device] : NULL;
    break;
  case 2: /* MEMORY_TYPE: managed memory reports DEVICE too */
    *(unsigned *)data = b ? 2u : 0u;
    break;
  case 8: /* IS_MANAGED */
    *(unsigned *)data = b ? (unsigned)b->managed : 0u;
    break;
  case 9: /* DEVICE_ORDINAL */
    *(int *)data = b ? b->device : -2;
    break;
  default:
    break;
  }
  pthread_mutex_unlock(&memoryLock);
}

/* --- Modules, functions, streams ----------------------------------------- */

struct Module {
  struct Context *context;
};
struct Function {
  struct Context *context;
  struct Module *module;
};
struct Stream {
  struct Context *context;
};
struct Event {
  int unused;
};

/* --- Control functions for the tests ------------------------------------- */

/** Number of calls of the driver entry point `name` (its ABI symbol name,
 *  e.g. "cuMemFree_v2") since the last reset; -1 for a name it lacks. */
long fake_cuda_count(const char *name) {
  for (int i = 0; i < E_COUNT; ++i)
    if (strcmp(entryNames[i], name) == 0)
      return atomic_load(&counts[i]);
  return -1;
}

/** Number of calls of all entry points since the last reset. */
long fake_cuda_total(void) {
  long total = 0;
  for (int i = 0; i < E_COUNT; ++i)
    total += atomic_load(&counts[i]);
  return total;
}

/** Sets every counter and the trace to 0. */
void fake_cuda_reset(void) {
  for (int i = 0; i < E_COUNT; ++i)
    atomic_store(&counts[i], 0);
  atomic_store(&traceLength, 0);
}

/** Writes the calls since the last reset in order, space-separated (the
 *  first 256), into `text` (`size` bytes, NUL-terminated). */
void fake_cuda_trace(char *text, size_t size) {
  if (!text || size == 0)
    return;
  text[0] = '\0';
  int length = atomic_load(&traceLength);
  if (length > kTraceLength)
    length = kTraceLength;
  size_t used = 0;
  for (int i = 0; i < length && used + 1 < size; ++i) {
    int written = snprintf(text + used, size - used, "%s%s", i ? " " : "",
                           entryNames[atomic_load(&trace[i])]);
    if (written < 0)
      break;
    used += (size_t)written;
  }
}

/** The context the calling thread has current (null: none). */
void *fake_cuda_current_context(void) { return current; }

/* --- The driver API ------------------------------------------------------ */

CUresult cuInit(unsigned flags) {
  count(E_cuInit);
  if (flags != 0)
    return INVALID_VALUE;
  const char *text = getenv("KINA_FAKE_CUDA_DEVICES");
  if (text && *text) {
    int n = atoi(text);
    deviceCount = n < 0 ? 0 : n > kMaxDevices ? kMaxDevices : n;
  }
  for (int i = 0; i < kMaxDevices; ++i)
    contexts[i].device = i;
  return SUCCESS;
}

CUresult cuDriverGetVersion(int *version) {
  count(E_cuDriverGetVersion);
  *version = 13000;
  return SUCCESS;
}

CUresult cuDeviceGetCount(int *n) {
  count(E_cuDeviceGetCount);
  *n = deviceCount;
  return SUCCESS;
}

CUresult cuDeviceGet(int *device, int ordinal) {
  count(E_cuDeviceGet);
  if (!validDevice(ordinal))
    return INVALID_DEVICE;
  *device = ordinal;
  return SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(void **context, int device) {
  count(E_cuDevicePrimaryCtxRetain);
  if (!validDevice(device))
    return INVALID_DEVICE;
  *context = &contexts[device];
  return SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(int device) {
  count(E_cuDevicePrimaryCtxRelease_v2);
  return validDevice(device) ? SUCCESS : INVALID_DEVICE;
}

CUresult cuCtxSetCurrent(void *context) {
  count(E_cuCtxSetCurrent);
  struct Context *c = context;
  if (c && (c < contexts || c >= contexts + deviceCount))
    return INVALID_CONTEXT;
  current = c;
  return SUCCESS;
}

CUresult cuCtxGetCurrent(void **context) {
  count(E_cuCtxGetCurrent);
  *context = current;
  return SUCCESS;
}

CUresult cuMemGetInfo_v2(size_t *freeBytes, size_t *totalBytes) {
  count(E_cuMemGetInfo_v2);
  if (!current)
    return INVALID_CONTEXT;
  *freeBytes = (size_t)1 << 34;
  *totalBytes = (size_t)1 << 35;
  return SUCCESS;
}

CUresult cuMemAllocManaged(CUdeviceptr *result, size_t bytes, unsigned flags) {
  count(E_cuMemAllocManaged);
  (void)flags;
  return allocate(result, bytes, 1);
}

CUresult cuMemAlloc_v2(CUdeviceptr *result, size_t bytes) {
  count(E_cuMemAlloc_v2);
  return allocate(result, bytes, 0);
}

CUresult cuMemFree_v2(CUdeviceptr address) {
  count(E_cuMemFree_v2);
  if (!current)
    return INVALID_CONTEXT;
  pthread_mutex_lock(&memoryLock);
  struct Block *b = findBlock(address);
  CUresult result = INVALID_VALUE;
  if (b && (uintptr_t)b->base == address) {
    b->live = 0;
    result = SUCCESS;
  }
  pthread_mutex_unlock(&memoryLock);
  return result;
}

CUresult cuPointerGetAttribute(void *data, int attribute, CUdeviceptr address) {
  count(E_cuPointerGetAttribute);
  int known = 0;
  pointerAttribute(attribute, data, address, &known);
  return known ? SUCCESS : INVALID_VALUE;
}

CUresult cuPointerGetAttributes(unsigned n, int *attributes, void **data,
                                CUdeviceptr address) {
  count(E_cuPointerGetAttributes);
  for (unsigned i = 0; i < n; ++i) {
    int known = 0;
    pointerAttribute(attributes[i], data[i], address, &known);
  }
  return SUCCESS;
}

CUresult cuGetErrorName(CUresult result, const char **name) {
  count(E_cuGetErrorName);
  switch (result) {
  case SUCCESS:
    *name = "CUDA_SUCCESS";
    return SUCCESS;
  case INVALID_VALUE:
    *name = "CUDA_ERROR_INVALID_VALUE";
    return SUCCESS;
  case INVALID_CONTEXT:
    *name = "CUDA_ERROR_INVALID_CONTEXT";
    return SUCCESS;
  case INVALID_HANDLE:
    *name = "CUDA_ERROR_INVALID_HANDLE";
    return SUCCESS;
  default:
    *name = NULL;
    return INVALID_VALUE;
  }
}

CUresult cuGetErrorString(CUresult result, const char **text) {
  count(E_cuGetErrorString);
  (void)result;
  *text = "stand-in driver error";
  return SUCCESS;
}

static CUresult loadModule(void **module) {
  if (!current)
    return INVALID_CONTEXT;
  struct Module *m = calloc(1, sizeof(*m));
  if (!m)
    return OUT_OF_MEMORY;
  m->context = current;
  *module = m;
  return SUCCESS;
}

CUresult cuModuleLoadData(void **module, const void *image) {
  count(E_cuModuleLoadData);
  if (!image)
    return INVALID_VALUE;
  return loadModule(module);
}

CUresult cuModuleLoadDataEx(void **module, const void *image, unsigned n,
                            int *options, void **values) {
  count(E_cuModuleLoadDataEx);
  (void)n;
  (void)options;
  (void)values;
  if (!image)
    return INVALID_VALUE;
  return loadModule(module);
}

CUresult cuModuleUnload(void *module) {
  count(E_cuModuleUnload);
  struct Module *m = module;
  if (!m)
    return INVALID_HANDLE;
  if (current != m->context)
    return INVALID_CONTEXT;
  free(m); /* Its functions are leaked: handles must stay distinct. */
  return SUCCESS;
}

CUresult cuModuleGetFunction(void **function, void *module, const char *name) {
  count(E_cuModuleGetFunction);
  struct Module *m = module;
  if (!m || !name)
    return INVALID_HANDLE;
  if (current != m->context)
    return INVALID_CONTEXT;
  struct Function *f = calloc(1, sizeof(*f));
  if (!f)
    return OUT_OF_MEMORY;
  f->context = m->context;
  f->module = m;
  *function = f;
  return SUCCESS;
}

CUresult cuFuncSetAttribute(void *function, int attribute, int value) {
  count(E_cuFuncSetAttribute);
  (void)attribute;
  (void)value;
  return function ? SUCCESS : INVALID_HANDLE;
}

CUresult cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz, unsigned smem,
                        void *stream, void **params, void **extra) {
  count(E_cuLaunchKernel);
  (void)smem;
  (void)params;
  (void)extra;
  struct Function *f = function;
  struct Stream *s = stream;
  if (!current)
    return INVALID_CONTEXT;
  if (!f || f->context != current || (s && s->context != current))
    return INVALID_HANDLE;
  if (!gx || !gy || !gz || !bx || !by || !bz ||
      (unsigned long)bx * by * bz > 1024)
    return INVALID_VALUE;
  return SUCCESS;
}

CUresult cuStreamCreate(void **stream, unsigned flags) {
  count(E_cuStreamCreate);
  (void)flags;
  if (!current)
    return INVALID_CONTEXT;
  struct Stream *s = calloc(1, sizeof(*s));
  if (!s)
    return OUT_OF_MEMORY;
  s->context = current;
  *stream = s;
  return SUCCESS;
}

CUresult cuStreamDestroy_v2(void *stream) {
  count(E_cuStreamDestroy_v2);
  if (!stream)
    return INVALID_HANDLE;
  free(stream);
  return SUCCESS;
}

CUresult cuStreamSynchronize(void *stream) {
  count(E_cuStreamSynchronize);
  struct Stream *s = stream;
  if (!s && !current)
    return INVALID_CONTEXT;
  return SUCCESS;
}

CUresult cuStreamWaitEvent(void *stream, void *event, unsigned flags) {
  count(E_cuStreamWaitEvent);
  (void)stream;
  (void)flags;
  return event ? SUCCESS : INVALID_HANDLE;
}

CUresult cuEventCreate(void **event, unsigned flags) {
  count(E_cuEventCreate);
  (void)flags;
  if (!current)
    return INVALID_CONTEXT;
  *event = calloc(1, sizeof(struct Event));
  return *event ? SUCCESS : OUT_OF_MEMORY;
}

CUresult cuEventDestroy_v2(void *event) {
  count(E_cuEventDestroy_v2);
  free(event);
  return SUCCESS;
}

CUresult cuEventRecord(void *event, void *stream) {
  count(E_cuEventRecord);
  (void)stream;
  return event ? SUCCESS : INVALID_HANDLE;
}

CUresult cuEventSynchronize(void *event) {
  count(E_cuEventSynchronize);
  return event ? SUCCESS : INVALID_HANDLE;
}

CUresult cuMemcpyAsync(CUdeviceptr destination, CUdeviceptr source,
                       size_t bytes, void *stream) {
  count(E_cuMemcpyAsync);
  (void)stream;
  if (!current)
    return INVALID_CONTEXT;
  memmove((void *)(uintptr_t)destination, (const void *)(uintptr_t)source,
          bytes);
  return SUCCESS;
}

CUresult cuMemsetD32Async(CUdeviceptr destination, unsigned value, size_t n,
                          void *stream) {
  count(E_cuMemsetD32Async);
  (void)stream;
  if (!current)
    return INVALID_CONTEXT;
  unsigned *p = (unsigned *)(uintptr_t)destination;
  for (size_t i = 0; i < n; ++i)
    p[i] = value;
  return SUCCESS;
}

CUresult cuMemsetD16Async(CUdeviceptr destination, unsigned short value,
                          size_t n, void *stream) {
  count(E_cuMemsetD16Async);
  (void)stream;
  if (!current)
    return INVALID_CONTEXT;
  unsigned short *p = (unsigned short *)(uintptr_t)destination;
  for (size_t i = 0; i < n; ++i)
    p[i] = value;
  return SUCCESS;
}

/* CUmemLocation {int type; int id;} by value. */
struct Location {
  int type;
  int id;
};
CUresult cuMemPrefetchAsync_v2(CUdeviceptr address, size_t bytes,
                               struct Location location, unsigned flags,
                               void *stream) {
  count(E_cuMemPrefetchAsync_v2);
  (void)address;
  (void)bytes;
  (void)flags;
  (void)stream;
  return validDevice(location.id) ? SUCCESS : INVALID_DEVICE;
}
