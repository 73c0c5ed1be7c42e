/*
 * optim_elem.h - one element of the optimizer steps, written once for the
 * host loops (optim.c) and the device kernels (dev_kernels.cu).
 */
#ifndef STRATA_FSDP_OPTIM_ELEM_H
#define STRATA_FSDP_OPTIM_ELEM_H

#include <math.h>

#ifdef __CUDACC__
#define FSDP_HD __host__ __device__
#else
#define FSDP_HD
#endif

/* AdamW, decoupled decay: step = lr/bc1, rbc2 = 1/sqrt(bc2), decay = 1 - lr*wd. */
static inline FSDP_HD void fsdp_adamw_elem(float *p, float g, float *m, float *v, float b1,
                                           float b2, float step, float rbc2, float eps,
                                           float decay)
{
    float mi = b1 * *m + (1.0f - b1) * g;
    float vi = b2 * *v + (1.0f - b2) * g * g;
    *m = mi;
    *v = vi;
    *p = *p * decay - step * mi / (sqrtf(vi) * rbc2 + eps);
}

#endif
