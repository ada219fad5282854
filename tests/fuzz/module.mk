# tests/fuzz: libFuzzer harnesses for the parsers (clang only; not part of `all`).
#   make fuzz         builds them into build/fuzz/
#   make fuzz-smoke   runs each for FUZZ_SECONDS (8; scripts/test.sh gives 4) on a copy of its seed
#                     corpus (-jN: N at once); longer campaigns: make fuzz-smoke FUZZ_SECONDS=240
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 8
FUZZ_DIR     := $(BUILD)/fuzz
FUZZ_FLAGS   := -std=c11 -D_GNU_SOURCE $(WARN) -g -O1 -Iinclude -Icommon \
                -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_NAMES   := size compute config api mig_request mig_visible mps # fuzz_config and fuzz_api are built by carved/*.mk

$(FUZZ_DIR)/fuzz_size: tests/fuzz/fuzz_size.c common/size.c common/size.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) tests/fuzz/fuzz_size.c common/size.c -o $@

$(FUZZ_DIR)/fuzz_compute: tests/fuzz/fuzz_compute.c common/compute.c common/compute.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) tests/fuzz/fuzz_compute.c common/compute.c -o $@

FUZZ_MIG_SRC := tests/fuzz/fuzz_mig_request.c planner/mig_request.c planner/mig_geometry.c \
                planner/mig_profiles.c common/size.c
$(FUZZ_DIR)/fuzz_mig_request: $(FUZZ_MIG_SRC) planner/mig.h planner/mig_plan.h common/size.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -Iplanner $(FUZZ_MIG_SRC) -o $@

$(FUZZ_DIR)/fuzz_mig_visible: tests/fuzz/fuzz_mig_visible.c planner/mig_visible.c \
                              planner/mig_visible.h planner/mig_nvml.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -Iplanner tests/fuzz/fuzz_mig_visible.c planner/mig_visible.c -o $@

# common/mps.c reads /proc with proc.c and start times with slice.c, whose pacing calls compute.c
FUZZ_MPS_SRC := tests/fuzz/fuzz_mps.c common/mps.c common/proc.c common/slice.c common/compute.c
$(FUZZ_DIR)/fuzz_mps: $(FUZZ_MPS_SRC) common/mps.h common/proc.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) $(FUZZ_MPS_SRC) -o $@

.PHONY: fuzz fuzz-smoke
fuzz: $(FUZZ_NAMES:%=$(FUZZ_DIR)/fuzz_%)

# one target a harness, so that `make -jN fuzz-smoke` runs N at once; the list is read at the
# second expansion because slurm/ and planner/ add their names after this file is included
.SECONDEXPANSION:
fuzz-smoke: $$(addprefix fuzz-smoke-,$$(FUZZ_NAMES))
fuzz-smoke-%: $(FUZZ_DIR)/fuzz_%
	rm -rf $(FUZZ_DIR)/corpus-$* && mkdir -p $(FUZZ_DIR)/corpus-$*
	cp tests/fuzz/corpus/$*/* $(FUZZ_DIR)/corpus-$*/
	$(FUZZ_DIR)/fuzz_$* -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 $(FUZZ_DIR)/corpus-$*
