# cli: the carve command (build/bin/carve).
CLI_SRC := $(filter-out cli/top.c,$(wildcard cli/*.c))
CLI_OBJ := $(CLI_SRC:%.c=$(OBJ)/%.o)

# jansson is linked in where its static library exists (Debian's libjansson-dev has it): every
# `carve run` start-up execs carve, and one shared library fewer to map is a tenth of carve's
# exec on a paravirtualised node (docs/results, carved-bench); elsewhere the shared one
JANSSON_STATIC := -Wl,-Bstatic -ljansson -Wl,-Bdynamic
CARVE_JANSSON := $(if $(findstring /,$(shell $(CC) -print-file-name=libjansson.a)),$(JANSSON_STATIC),-ljansson)
$(BIN)/carve: $(CLI_OBJ) $(PLANNER_LIB) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS) $(CARVE_JANSSON) -ldl

ALL_TARGETS += $(BIN)/carve

# carve top is its own program, run by `carve top` (cli/top_exec.c): ncurses is loaded by it
# alone, not by every carve run.
$(LIBDIR)/carve-top: $(OBJ)/cli/top-program.o $(OBJ)/cli/daemon.o $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS) -ljansson -lncurses
$(OBJ)/cli/top-program.o: cli/top.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DCARVE_TOP_PROGRAM -MMD -MP -c $< -o $@

ALL_TARGETS += $(LIBDIR)/carve-top
