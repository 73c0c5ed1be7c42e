# make demo runs this (train_gpt on 4 ranks)
EXTRA_DIST += examples/gpt/demo

# examples/gpt/ - the GPT-2-style model (forward and backward on CPUs, data)
# and its single-process reference trainer. Needs CBLAS for the matrix
# products, so nothing here is built without it.
if HAVE_CBLAS
noinst_LIBRARIES += examples/gpt/libgpt.a
examples_gpt_libgpt_a_SOURCES = \
    examples/gpt/gpt.h \
    examples/gpt/kernels.c \
    examples/gpt/model.c \
    examples/gpt/threads.c \
    examples/gpt/data.c
examples_gpt_libgpt_a_CPPFLAGS = $(AM_CPPFLAGS) $(BLAS_CFLAGS)
# the elementwise loops are written to vectorise; -O2 alone barely does, and
# the clamps in exp/GELU need -fno-trapping-math to become vector selects
examples_gpt_libgpt_a_CFLAGS = $(AM_CFLAGS) -ftree-vectorize -fno-trapping-math

GPT_LDADD = examples/gpt/libgpt.a libstrata.la $(BLAS_LIBS) -lm

noinst_PROGRAMS += examples/gpt/gpt_ref_train
examples_gpt_gpt_ref_train_SOURCES = examples/gpt/gpt_ref_train.c
examples_gpt_gpt_ref_train_LDADD = $(GPT_LDADD)

# the main job: the model as FSDP units, trained by mpirun
noinst_PROGRAMS += examples/gpt/train_gpt
examples_gpt_train_gpt_SOURCES = examples/gpt/train_gpt.c examples/gpt/gpt_fsdp.c \
    examples/gpt/gpt_fsdp.h
examples_gpt_train_gpt_LDADD = $(GPT_LDADD)
dist_check_SCRIPTS += t/gpt-train-np1-np4.t t/gpt-train-policy.t t/gpt-train-resume.t \
    t/gpt-train-errors.t t/gpt-train-trace.t t/gpt-train-tight.t
TESTS += t/gpt-train-np1-np4.t t/gpt-train-policy.t t/gpt-train-resume.t t/gpt-train-errors.t t/gpt-train-trace.t t/gpt-train-tight.t

# Tests: the programs live in t/ beside the others; they are listed here so
# that they exist only where CBLAS does.
check_PROGRAMS += t/gpt_grad.t t/gpt_ref.t t/gpt_data.t
t_gpt_grad_t_SOURCES = t/gpt_grad.t.c
t_gpt_ref_t_SOURCES = t/gpt_ref.t.c
t_gpt_data_t_SOURCES = t/gpt_data.t.c
t_gpt_grad_t_LDADD = $(GPT_LDADD) t/libtap.a
t_gpt_ref_t_LDADD = $(GPT_LDADD) t/libtap.a
t_gpt_data_t_LDADD = $(GPT_LDADD) t/libtap.a
dist_check_SCRIPTS += t/gpt-learn.t t/gpt-demo.t
TESTS += t/gpt_grad.t t/gpt_ref.t t/gpt_data.t t/gpt-learn.t t/gpt-demo.t
endif
