# cli: the carve command (build/bin/carve).
CLI_SRC := $(wildcard cli/*.c)
CLI_OBJ := $(CLI_SRC:%.c=$(OBJ)/%.o)

$(BIN)/carve: $(CLI_OBJ) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS) -ljansson -lncurses -ldl

ALL_TARGETS += $(BIN)/carve
