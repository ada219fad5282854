# planner/fleet.mk: the fleet planner's, advisor's and cost calculator's unit tests, fuzz
# harness and benchmark (their code is in PLANNER_LIB, built by planner/module.mk). Included
# after tests/module.mk so that the fuzz variables are known.
#   make fuzz-smoke-workloads   runs the workload-file harness for FUZZ_SECONDS

UNIT_FLEET     := test_fleet test_advise test_cost
UNIT_FLEET_BIN := $(UNIT_FLEET:%=$(TESTDIR)/unit/%)

$(UNIT_FLEET_BIN): $(TESTDIR)/unit/%: $(OBJ)/tests/unit/%.o $(PLANNER_LIB) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS) -lcmocka -ljansson -lpthread

$(OBJ)/tests/unit/test_cost.o: CFLAGS += -DCOST_FIXTURE='"$(CURDIR)/tests/unit/fixtures/carved-state.json"'

ALL_TARGETS  += $(UNIT_FLEET_BIN)
TEST_TARGETS += $(UNIT_FLEET_BIN)

# bench: 100,000 workloads onto 10,000 GPUs (bench/plan_bench.c; docs/results/*-plan-bench.md)
$(BUILD)/bench/plan_bench: $(OBJ)/bench/plan_bench.o $(PLANNER_LIB) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS) -ljansson -lpthread

ALL_TARGETS += $(BUILD)/bench/plan_bench

# fuzz: the workload-file parser (CSV and JSON) and the fleet spec parser
FUZZ_DIR ?= $(BUILD)/fuzz
FUZZ_WORKLOADS_SRC := tests/fuzz/fuzz_workloads.c planner/fleet_input.c planner/fleet_gpus.c \
	planner/fleet_pack.c planner/fleet_firstfit.c planner/fleet_fill.c planner/fleet_choose.c \
	planner/fleet_bound.c planner/fleet_lp.c planner/fleet_mig.c planner/fleet_exact.c \
	planner/fleet_mig_repair.c planner/fleet_repack.c planner/fleet_polish.c planner/fleet_pattern.c \
	planner/fleet_colgen.c planner/fleet_parts.c planner/fleet_simplex.c planner/mig_profiles.c \
	common/size.c common/compute.c
FUZZ_NAMES += workloads

$(FUZZ_DIR)/fuzz_workloads: $(FUZZ_WORKLOADS_SRC) planner/fleet.h planner/fleet_pack.h planner/mig.h \
	common/size.h common/compute.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -Iplanner $(FUZZ_WORKLOADS_SRC) -o $@ -ljansson -lpthread

.PHONY: fuzz
fuzz: $(FUZZ_DIR)/fuzz_workloads
