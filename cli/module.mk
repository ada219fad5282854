# cli: the carve command (build/bin/carve).
CLI_SRC := $(filter-out cli/top.c cli/dynamic_twin.c,$(wildcard cli/*.c))
CLI_OBJ := $(CLI_SRC:%.c=$(OBJ)/%.o)

# jansson is linked in where its static library exists (Debian's libjansson-dev has it): every
# `carve run` start-up execs carve, and one shared library fewer to map is a tenth of carve's
# exec on a paravirtualised node (docs/results, carved-bench); elsewhere the shared one
JANSSON_STATIC := -Wl,-Bstatic -ljansson -Wl,-Bdynamic
has_static = $(findstring /,$(shell $(CC) -print-file-name=$(1)))
CARVE_JANSSON := $(if $(call has_static,libjansson.a),$(JANSSON_STATIC),-ljansson)

# carve itself is linked statically where the C library's and jansson's static libraries exist
# (Debian's libc6-dev and libjansson-dev), but not with the sanitizers, which need the dynamic
# loader: a start-up then maps no shared library at all, about a quarter more start-ups a
# second on a paravirtualised node (docs/results/2026-11-23-carved-bench-simulated.md). The
# commands that load NVML hand over to lib/carve/carve-dynamic, the same objects linked
# dynamically (cli/dynamic_twin.c). Elsewhere bin/carve is the dynamic link itself.
CARVE_STATIC := $(if $(filter 1 thread,$(SAN)),,$(and $(call has_static,libc.a),$(call has_static,libjansson.a)))

ifneq ($(CARVE_STATIC),)
$(BIN)/carve: $(CLI_OBJ) $(OBJ)/cli/dynamic_twin.o $(PLANNER_LIB) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) -static -o $@ $^ $(LDFLAGS) -Wl,--wrap=dlopen -ljansson -lpthread

$(LIBDIR)/carve-dynamic: $(CLI_OBJ) $(PLANNER_LIB) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS) $(CARVE_JANSSON) -ldl -lpthread

ALL_TARGETS += $(LIBDIR)/carve-dynamic
else
# (a twin left from a static link in this build directory would be run by nothing, and
# mislead the tests that look for it)
$(BIN)/carve: $(CLI_OBJ) $(PLANNER_LIB) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	rm -f $(LIBDIR)/carve-dynamic
	$(CC) -o $@ $^ $(LDFLAGS) $(CARVE_JANSSON) -ldl -lpthread
endif

ALL_TARGETS += $(BIN)/carve

# carve top is its own program, run by `carve top` (cli/top_exec.c): ncurses is loaded by it
# alone, not by every carve run.
$(LIBDIR)/carve-top: $(OBJ)/cli/top-program.o $(OBJ)/cli/daemon.o $(OBJ)/cli/options.o $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS) -ljansson -lncurses
$(OBJ)/cli/top-program.o: cli/top.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DCARVE_TOP_PROGRAM -MMD -MP -c $< -o $@

ALL_TARGETS += $(LIBDIR)/carve-top
