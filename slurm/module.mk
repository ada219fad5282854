# slurm: the SPANK plugin (build/lib/carve/spank_carve.so, when Slurm's spank.h is
# installed: Debian's libslurm-dev, in scripts/install-deps.sh), carve-slurm-cleanup, and
# their unit tests and fuzz harness. job.c holds the logic and hostlist.c reads gres.conf's
# hostlists; neither includes a Slurm header nor needs libslurm.
SLURM_JOB_OBJ := $(OBJ)/slurm/job.o $(OBJ)/slurm/hostlist.o $(OBJ)/cli/daemon.o \
                 $(OBJ)/cli/options.o
SPANK_HEADER  ?= $(wildcard /usr/include/slurm/spank.h)

$(OBJ)/slurm/%.o: CFLAGS += -Islurm -Icli

$(BIN)/carve-slurm-cleanup: $(OBJ)/slurm/cleanup.o $(SLURM_JOB_OBJ) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS) -ljansson -ldl

ALL_TARGETS += $(BIN)/carve-slurm-cleanup

ifneq ($(SPANK_HEADER),)
# Loaded by srun, sbatch, salloc, slurmd and slurmstepd: only the SPANK entry points are
# exported (-fvisibility=hidden, spank.c marks them).
$(LIBDIR)/spank_carve.so: $(OBJ)/slurm/spank.o $(SLURM_JOB_OBJ) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $^ $(LDFLAGS) -ljansson -ldl

ALL_TARGETS += $(LIBDIR)/spank_carve.so
endif

TEST_SLURM_JOB := $(TESTDIR)/unit/test_slurm_job
$(TEST_SLURM_JOB): $(OBJ)/tests/unit/test_slurm_job.o $(SLURM_JOB_OBJ) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS) -lcmocka -ljansson -ldl -lpthread
$(OBJ)/tests/unit/test_slurm_job.o: CFLAGS += -Islurm -Icli

TEST_SLURM_HOSTLIST := $(TESTDIR)/unit/test_slurm_hostlist
$(TEST_SLURM_HOSTLIST): $(OBJ)/tests/unit/test_slurm_hostlist.o $(OBJ)/slurm/hostlist.o
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS) -lcmocka
$(OBJ)/tests/unit/test_slurm_hostlist.o: CFLAGS += -Islurm

ALL_TARGETS  += $(TEST_SLURM_JOB) $(TEST_SLURM_HOSTLIST)
TEST_TARGETS += $(TEST_SLURM_JOB) $(TEST_SLURM_HOSTLIST)

# Fuzz harness (clang, not part of `all'): the option checks, the record and gres.conf
# parsers. `make fuzz-smoke' runs it with the others (FUZZ_NAMES).
FUZZ_DIR ?= $(BUILD)/fuzz
FUZZ_SLURM_SRC := tests/fuzz/fuzz_slurm.c slurm/job.c slurm/hostlist.c cli/daemon.c cli/options.c \
                  $(wildcard common/*.c)
FUZZ_NAMES += slurm

$(FUZZ_DIR)/fuzz_slurm: $(FUZZ_SLURM_SRC) slurm/job.h slurm/hostlist.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -Islurm -Icli $(FUZZ_SLURM_SRC) -o $@ -ljansson -ldl -lpthread

.PHONY: fuzz
fuzz: $(FUZZ_DIR)/fuzz_slurm
