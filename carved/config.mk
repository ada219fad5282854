# carved/config.mk: the config parser's unit test and fuzz harness (included from
# carved/module.mk, which links $(OBJ)/carved/config.o into carved).
#   make fuzz-config-smoke   runs the harness for FUZZ_SECONDS on a copy of its seed corpus

# Unit test; it also loads carved/carved.conf.example, found through an absolute path.
TEST_CONFIG := $(TESTDIR)/unit/test_config
$(TEST_CONFIG): $(OBJ)/tests/unit/test_config.o $(OBJ)/carved/config.o $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS) -lcmocka -ljansson
$(OBJ)/tests/unit/test_config.o: CFLAGS += -Icarved \
	-DCARVED_CONF_EXAMPLE='"$(CURDIR)/carved/carved.conf.example"'

ALL_TARGETS  += $(TEST_CONFIG)
TEST_TARGETS += $(TEST_CONFIG)

# Fuzz harness (clang, not part of `all'). FUZZ_CC, FUZZ_FLAGS and FUZZ_SECONDS come from
# tests/fuzz/module.mk and are read when the recipes run; FUZZ_DIR names the target, so it
# is set here too in case this file is read first (the same value).
FUZZ_DIR ?= $(BUILD)/fuzz
FUZZ_CONFIG_SRC := tests/fuzz/fuzz_config.c carved/config.c common/size.c common/compute.c \
	common/slice.c common/proc.c common/uuid.c

$(FUZZ_DIR)/fuzz_config: $(FUZZ_CONFIG_SRC) carved/carved.h common/size.h common/compute.h common/slice.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -Icarved $(FUZZ_CONFIG_SRC) -o $@

.PHONY: fuzz fuzz-config-smoke
fuzz: $(FUZZ_DIR)/fuzz_config

fuzz-config-smoke: $(FUZZ_DIR)/fuzz_config
	rm -rf $(FUZZ_DIR)/corpus-config && mkdir -p $(FUZZ_DIR)/corpus-config
	cp tests/fuzz/corpus/config/* $(FUZZ_DIR)/corpus-config/
	$(FUZZ_DIR)/fuzz_config -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
		$(FUZZ_DIR)/corpus-config
