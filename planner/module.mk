# planner: placement planning. Today the MIG part: profile tables (mig_profiles.c), the geometry
# planner (mig_geometry.c) and the request parser (mig_request.c), in one archive that the carve
# command links; the simulated GPU's NVML links only the tables. Included before cli/module.mk
# so that PLANNER_LIB is known when the carve command's rule is read.
PLANNER_SRC := $(wildcard planner/*.c)
PLANNER_OBJ := $(PLANNER_SRC:%.c=$(OBJ)/%.o)
PLANNER_LIB := $(OBJ)/libcarveplanner.a
CFLAGS      += -Iplanner

$(PLANNER_LIB): $(PLANNER_OBJ)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

# tests/unit: the planner's cmocka tests
UNIT_PLANNER     := test_mig_profiles test_mig_plan test_mig_visible
UNIT_PLANNER_BIN := $(UNIT_PLANNER:%=$(TESTDIR)/unit/%)

$(UNIT_PLANNER_BIN): $(TESTDIR)/unit/%: $(OBJ)/tests/unit/%.o $(PLANNER_LIB) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS) -lcmocka -lpthread

# test_mig_nvml drives planner/mig_nvml.c against the simulated GPU's NVML
TEST_MIG_NVML := $(TESTDIR)/unit/test_mig_nvml
$(TEST_MIG_NVML): $(OBJ)/tests/unit/test_mig_nvml.o $(PLANNER_LIB) $(COMMON_LIB) | \
                  $(SIMDIR)/libnvidia-ml.so.1
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(filter-out $(SIMDIR)/%,$^) $(LDFLAGS) -lcmocka -ldl -lpthread
$(OBJ)/tests/unit/test_mig_nvml.o: CFLAGS += -DSIM_NVML='"$(abspath $(SIMDIR))/libnvidia-ml.so.1"'

ALL_TARGETS  += $(UNIT_PLANNER_BIN) $(TEST_MIG_NVML)
TEST_TARGETS += $(UNIT_PLANNER_BIN) $(TEST_MIG_NVML)
