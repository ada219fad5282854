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
UNIT_PLANNER     := test_mig_profiles test_mig_plan
UNIT_PLANNER_BIN := $(UNIT_PLANNER:%=$(TESTDIR)/unit/%)

$(UNIT_PLANNER_BIN): $(TESTDIR)/unit/%: $(OBJ)/tests/unit/%.o $(PLANNER_LIB) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS) -lcmocka

ALL_TARGETS  += $(UNIT_PLANNER_BIN)
TEST_TARGETS += $(UNIT_PLANNER_BIN)
