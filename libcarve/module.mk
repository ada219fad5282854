# libcarve: the LD_PRELOAD interposer (build/lib/carve/libcarve.so), its unit test and the
# driver-API programs of tests/e2e/mem_* that exercise it on the simulated GPU.
LIBCARVE_SRC := $(wildcard libcarve/*.c)
LIBCARVE_OBJ := $(LIBCARVE_SRC:%.c=$(OBJ)/%.o)
LIBCARVE_SO  := $(LIBDIR)/libcarve.so

$(LIBCARVE_SO): $(LIBCARVE_OBJ) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $(LIBCARVE_OBJ) $(COMMON_LIB) $(LDFLAGS) -ldl -lpthread

ALL_TARGETS += $(LIBCARVE_SO)

# Unit test: the tables generated from hooks.def, linked from libcarve's objects, resolved
# against the simulated driver (found through the runpath, relative to the binary).
TEST_HOOKS := $(TESTDIR)/unit/test_hooks
$(TEST_HOOKS): $(OBJ)/tests/unit/test_hooks.o $(LIBCARVE_OBJ) $(COMMON_LIB) | $(SIMDIR)/libcuda.so.1
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS) -Wl,-rpath,'$$ORIGIN/../../lib/carve/sim' -lcmocka -ldl -lpthread
$(OBJ)/tests/unit/test_hooks.o: CFLAGS += -Ilibcarve
# Not in the sanitizer build: the test binary exports libcarve's dlsym, which the ASan
# runtime calls while it starts, before it can run instrumented code.
ifneq ($(SAN),1)
ALL_TARGETS  += $(TEST_HOOKS)
TEST_TARGETS += $(TEST_HOOKS)
endif

# End-to-end programs (run by tests/e2e/mem_slice.sh, as is nvml_list; mem_forge by carved.sh,
# mem_claim by carved_reclaim.sh, launch_multi by compute_share.sh, fork_init by carved.sh,
# fd_starved by carved.sh and mem_slice.sh, pace_ctx by pace_contexts.sh). mem_direct,
# fork_init and fd_starved link the simulated libcuda; the others find the driver at run time.
MEM_E2E_DIR  := $(TESTDIR)/e2e
MEM_E2E_LIB  := $(OBJ)/tests/e2e/mem_common.o
MEM_E2E_PROG := mem_direct mem_dlsym mem_gpa mem_stress mem_kill mem_forge mem_claim mem_pooldev \
                mem_graph mem_edge mem_overhead mem_first mem_remap mem_retain mem_inflight \
                mem_slots nvml_list launch_multi pace_ctx fork_init fd_starved
MEM_E2E_BIN  := $(MEM_E2E_PROG:%=$(MEM_E2E_DIR)/%)

$(MEM_E2E_DIR)/mem_direct: $(OBJ)/tests/e2e/mem_direct.o $(MEM_E2E_LIB) | $(SIMDIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS) -L$(SIMDIR) -lcuda
$(MEM_E2E_DIR)/fork_init $(MEM_E2E_DIR)/fd_starved: $(MEM_E2E_DIR)/%: $(OBJ)/tests/e2e/%.o \
		| $(SIMDIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS) -L$(SIMDIR) -lcuda -lpthread
$(MEM_E2E_DIR)/mem_dlsym $(MEM_E2E_DIR)/mem_gpa \
$(MEM_E2E_DIR)/mem_kill $(MEM_E2E_DIR)/mem_forge $(MEM_E2E_DIR)/mem_claim \
$(MEM_E2E_DIR)/mem_pooldev $(MEM_E2E_DIR)/mem_slots $(MEM_E2E_DIR)/mem_overhead \
$(MEM_E2E_DIR)/mem_first: $(MEM_E2E_DIR)/%: $(OBJ)/tests/e2e/%.o $(MEM_E2E_LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS) -ldl -lpthread
$(MEM_E2E_DIR)/nvml_list $(MEM_E2E_DIR)/launch_multi $(MEM_E2E_DIR)/pace_ctx: $(MEM_E2E_DIR)/%: \
		$(OBJ)/tests/e2e/%.o
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS) -ldl
$(MEM_E2E_DIR)/mem_edge $(MEM_E2E_DIR)/mem_remap $(MEM_E2E_DIR)/mem_retain \
$(MEM_E2E_DIR)/mem_inflight: $(MEM_E2E_DIR)/%: $(OBJ)/tests/e2e/%.o $(MEM_E2E_LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS) -ldl -lpthread
$(MEM_E2E_DIR)/mem_graph: $(OBJ)/tests/e2e/mem_graph.o $(MEM_E2E_LIB) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS) -ldl -lpthread
$(MEM_E2E_DIR)/mem_stress: $(OBJ)/tests/e2e/mem_stress.o $(MEM_E2E_LIB) $(OBJ)/tests/snapshot.o \
		$(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS) -ldl -lpthread

ALL_TARGETS += $(MEM_E2E_BIN)

TEST_ALLOCMAP := $(TESTDIR)/unit/test_allocmap
$(TEST_ALLOCMAP): $(OBJ)/tests/unit/test_allocmap.o $(OBJ)/libcarve/allocmap.o
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS) -lcmocka -lpthread
$(OBJ)/tests/unit/test_allocmap.o: CFLAGS += -Ilibcarve
ALL_TARGETS  += $(TEST_ALLOCMAP)
TEST_TARGETS += $(TEST_ALLOCMAP)
