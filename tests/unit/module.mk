# tests/unit: cmocka tests of common/, one binary per feature (libcarve's are in
# libcarve/module.mk).
UNIT_COMMON := test_size test_slice test_compute test_pace test_board test_mps test_proc \
               test_nvml_procs
UNIT_COMMON_BIN := $(UNIT_COMMON:%=$(TESTDIR)/unit/%)

$(UNIT_COMMON_BIN): $(TESTDIR)/unit/%: $(OBJ)/tests/unit/%.o $(OBJ)/tests/snapshot.o $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS) -lcmocka -lpthread

ALL_TARGETS  += $(UNIT_COMMON_BIN)
TEST_TARGETS += $(UNIT_COMMON_BIN)
