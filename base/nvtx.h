/*
 * nvtx.h - NVTX ranges, so Nsight Systems shows the ops of the Chrome
 * trace under the same names (F, B, AG, RS, D2H, H2D, H2S, S2H). CUDA
 * builds use the header-only nvtx3 that ships with CUDA (no library to
 * link: it does nothing until a tool such as nsys injects itself);
 * elsewhere every call compiles to nothing.
 *
 * Push/pop nest on one thread (compute); start/end pair by id and may be
 * ended on another thread (a collective or a copy that completes there).
 */
#ifndef STRATA_BASE_NVTX_H
#define STRATA_BASE_NVTX_H

#include <stdint.h>

#if defined(HAVE_CUDA) && defined(__has_include)
#if __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>
#define BASE_NVTX 1
#endif
#endif

#ifdef BASE_NVTX
#define base_nvtx_push(name) ((void)nvtxRangePushA(name))
#define base_nvtx_pop()      ((void)nvtxRangePop())
#define base_nvtx_mark(name) nvtxMarkA(name)
#define base_nvtx_start(name) ((uint64_t)nvtxRangeStartA(name))
#define base_nvtx_end(id)    do { if (id) nvtxRangeEnd((nvtxRangeId_t)(id)); } while (0)
#else
#define base_nvtx_push(name) ((void)(name))
#define base_nvtx_pop()      ((void)0)
#define base_nvtx_mark(name) ((void)(name))
#define base_nvtx_start(name) ((void)(name), (uint64_t)0)
#define base_nvtx_end(id)    ((void)(id))
#endif

#endif
