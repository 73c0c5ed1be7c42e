/* mlp_model.c - the MLP's units, data and training loop (see mlp_model.h). */
#include "config.h"
#include "mlp_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the layer --------------------------------------------------------------- */

typedef struct mlp_layer layer_t;

/* W and b as f32: the gathered copy itself, or a converted workspace copy
 * when the compute dtype is bf16. */
static strata_status_t params_f32(strata_unit_call_t *call, const float **w, const float **b,
                                  size_t nw, size_t nb)
{
    void *pw, *pb;
    strata_status_t st;
    if (STRATA_OK != (st = strata_call_param(call, 0, &pw, NULL))) return st;
    if (STRATA_OK != (st = strata_call_param(call, 1, &pb, NULL))) return st;
    if (STRATA_F32 == strata_call_compute_dtype(call)) {
        *w = pw;
        *b = pb;
        return STRATA_OK;
    }
    float *ws;
    if (STRATA_OK != (st = strata_call_workspace(call, (nw + nb) * sizeof(float), (void **)&ws)))
        return st;
    strata_bf16_to_f32(pw, ws, nw);
    strata_bf16_to_f32(pb, ws + nw, nb);
    *w = ws;
    *b = ws + nw;
    return STRATA_OK;
}

static strata_status_t layer_forward(strata_unit_call_t *call, void *user)
{
    const layer_t *l = user;
    const float *x, *w, *b;
    size_t in_bytes;
    float *y, *pre = NULL;
    strata_status_t st;
    if (STRATA_OK != (st = strata_call_input(call, (const void **)&x, &in_bytes))) return st;
    size_t rows = in_bytes / ((size_t)l->in * sizeof(float));
    if (STRATA_OK != (st = params_f32(call, &w, &b, (size_t)l->in * l->out, l->out))) return st;
    if (STRATA_OK != (st = strata_call_output(call, rows * l->out * sizeof(float), (void **)&y)))
        return st;
    if (l->relu && strata_call_training(call) &&
        STRATA_OK != (st = strata_save(call, l->save, rows * l->out * sizeof(float), (void **)&pre)))
        return st;
    for (size_t i = 0; i < rows; i++) {
        const float *xi = x + i * l->in;
        for (int o = 0; o < l->out; o++) {
            const float *wo = w + (size_t)o * l->in;
            float s = b[o];
            for (int k = 0; k < l->in; k++) s += wo[k] * xi[k];
            if (pre) pre[i * l->out + o] = s;
            y[i * l->out + o] = l->relu && s < 0 ? 0.0f : s;
        }
        if (l->chunk && 0 == (i + 1) % (size_t)l->chunk) strata_call_progress(call);
    }
    return STRATA_OK;
}

static strata_status_t layer_backward(strata_unit_call_t *call, void *user)
{
    const layer_t *l = user;
    const float *x, *w, *b, *dy;
    float *dw, *db, *dx, *pre = NULL, *dpre;
    size_t in_bytes, dy_bytes, dx_bytes;
    strata_status_t st;
    if (STRATA_OK != (st = strata_call_input(call, (const void **)&x, &in_bytes))) return st;
    if (STRATA_OK != (st = strata_call_grad_output(call, (const void **)&dy, &dy_bytes))) return st;
    if (STRATA_OK != (st = strata_call_grad_input(call, (void **)&dx, &dx_bytes))) return st;
    if (STRATA_OK != (st = params_f32(call, &w, &b, (size_t)l->in * l->out, l->out))) return st;
    if (STRATA_OK != (st = strata_call_grad(call, 0, &dw, NULL))) return st;
    if (STRATA_OK != (st = strata_call_grad(call, 1, &db, NULL))) return st;
    size_t rows = in_bytes / ((size_t)l->in * sizeof(float));
    if (!dy || dy_bytes != rows * l->out * sizeof(float)) return STRATA_ERR_MISMATCH;
    if (l->relu && STRATA_OK != (st = strata_saved(call, l->save, (void **)&pre, NULL))) return st;
    /* dpre overwrites the saved pre-activation: it is ours until we return */
    dpre = pre ? pre : NULL;
    if (!dpre && STRATA_OK != (st = strata_call_workspace(call, dy_bytes, (void **)&dpre)))
        return st;
    for (size_t j = 0; j < rows * l->out; j++)
        dpre[j] = (!pre || pre[j] > 0) ? dy[j] : 0.0f;
    for (size_t i = 0; i < rows; i++) {
        const float *xi = x + i * l->in, *gi = dpre + i * l->out;
        for (int o = 0; o < l->out; o++) {
            float g = gi[o];
            float *dwo = dw + (size_t)o * l->in;
            db[o] += g;
            for (int k = 0; k < l->in; k++) dwo[k] += g * xi[k];
        }
        if (dx) {
            float *dxi = dx + i * l->in;
            for (int o = 0; o < l->out; o++) {
                const float *wo = w + (size_t)o * l->in;
                float g = gi[o];
                for (int k = 0; k < l->in; k++) dxi[k] += g * wo[k];
            }
        }
        if (l->chunk && 0 == (i + 1) % (size_t)l->chunk) strata_call_progress(call);
    }
    return STRATA_OK;
}

strata_status_t mlp_build(strata_model_t *model, mlp_t *mlp, int layers, int width)
{
    strata_status_t st;
    if (layers < 1 || layers > MLP_MAX_LAYERS || width < 1) return STRATA_ERR_INVALID;
    mlp->layers = layers;
    mlp->width = width;
    for (int i = 0; i < layers; i++) {
        char name[32];
        strata_unit_t *u;
        mlp->layer[i] = (layer_t){ width, width, i < layers - 1, mlp->chunk_rows, "pre" };
        if (mlp->save_names > 0)
            snprintf(mlp->layer[i].save, sizeof mlp->layer[i].save, "pre_%c",
                     'a' + i % (mlp->save_names > 26 ? 26 : mlp->save_names));
        snprintf(name, sizeof name, "fc%d", i);
        if (STRATA_OK != (st = strata_model_add_unit(model, name, layer_forward, layer_backward,
                                                      &mlp->layer[i], &u)))
            return st;
        size_t wd[2] = { (size_t)width, (size_t)width }, bd[1] = { (size_t)width };
        const float std = 1.0f / sqrtf((float)width);
        if (STRATA_OK != (st = strata_unit_add_param(u, "weight", 2, wd, STRATA_F32,
                                                     STRATA_PARAM_NORMAL(std), NULL)))
            return st;
        if (STRATA_OK != (st = strata_unit_add_param(u, "bias", 1, bd, STRATA_F32,
                                                     STRATA_PARAM_ZEROS, NULL)))
            return st;
    }
    return STRATA_OK;
}

/* ---- data and loss --------------------------------------------------------------- */

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

void mlp_data(uint64_t seed, uint64_t first, int n, int width, float *x, float *y)
{
    for (int i = 0; i < n; i++) {
        uint64_t s = mix(seed ^ mix(first + (uint64_t)i));
        float *xi = x + (size_t)i * width, *yi = y + (size_t)i * width;
        for (int j = 0; j < width; j++) {
            uint64_t h = mix(s + (uint64_t)j);
            xi[j] = (float)((h >> 40) * (1.0 / 16777216.0) * 2.0 - 1.0) * 1.7f;
        }
        for (int j = 0; j < width; j++)
            yi[j] = 0.5f * sinf(2.0f * xi[j]) + 0.25f * xi[(j + 1) % width];
    }
}

/* Mean squared error over rows x width and its gradient. */
static float mse(const float *out, const float *y, size_t n, float *dout)
{
    double l = 0;
    for (size_t i = 0; i < n; i++) {
        float d = out[i] - y[i];
        l += (double)d * d;
        dout[i] = 2.0f * d / (float)n;
    }
    return (float)(l / (double)n);
}

strata_status_t mlp_train(strata_model_t *model, const mlp_t *mlp, const mlp_train_t *a,
                          float *loss_p)
{
    size_t n = (size_t)a->batch * mlp->width;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *dout = malloc(n * sizeof *y);
    strata_status_t st = STRATA_OK;
    float loss = 0;
    if (!x || !y || !dout) {
        st = STRATA_ERR_NOMEM;
        goto out;
    }
    for (int s = 0; s < a->steps && STRATA_OK == st; s++) {
        if (STRATA_OK != (st = strata_model_step_begin(model, a->accum))) break;
        for (int m = 0; m < a->accum; m++) {
            uint64_t first = (((uint64_t)(a->first_step + s) * a->accum + m) * a->data_ranks + a->data_rank) *
                             (uint64_t)a->batch;
            const void *out;
            size_t out_bytes;
            mlp_data(a->data_seed, first, a->batch, mlp->width, x, y);
            st = strata_model_forward(model, x, n * sizeof *x, NULL, &out, &out_bytes);
            if (STRATA_OK != st) break;
            loss = mse(out, y, n, dout);
            st = strata_model_backward(model, dout, out_bytes);
            if (STRATA_OK != st) break;
        }
        if (STRATA_OK == st) st = strata_model_step_end(model);
    }
out:
    free(x);
    free(y);
    free(dout);
    if (STRATA_OK == st && loss_p) *loss_p = loss;
    return st;
}
