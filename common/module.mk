# common: code shared by libcarve, the simulated GPU, the CLI and the daemon.
COMMON_SRC := $(wildcard common/*.c)
COMMON_OBJ := $(COMMON_SRC:%.c=$(OBJ)/%.o)
COMMON_LIB := $(OBJ)/libcarvecommon.a

$(COMMON_LIB): $(COMMON_OBJ)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^
