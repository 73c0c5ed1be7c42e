# share/ - the planner's model and hardware files (JSON), installed under
# $(pkgdatadir) where `strata plan --model NAME --hw NAME` finds them.
modelsdir = $(pkgdatadir)/models
dist_models_DATA = \
    share/models/gpt-example.json \
    share/models/llama3-8b.json \
    share/models/llama3-70b.json \
    share/models/llama3.1-405b.json \
    share/models/deepseek-v3-671b.json \
    share/models/qwen3-30b-a3b.json \
    share/models/llama2-13b.json \
    share/models/llama2-70b.json \
    share/models/mpt-7b.json \
    share/models/mpt-13b.json \
    share/models/mpt-30b.json \
    share/models/mpt-70b.json
hwdir = $(pkgdatadir)/hw
dist_hw_DATA = \
    share/hw/gb200-nvl72.json \
    share/hw/h200-hgx.json \
    share/hw/h100-hgx.json \
    share/hw/h100-96gb-gt.json \
    share/hw/a100-80gb.json
# the published runs bench/plan-validate compares the planner with
validationdir = $(pkgdatadir)/validation
dist_validation_DATA = share/validation/runs.json
