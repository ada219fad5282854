# carved: the node daemon (build/bin/carved); its config parser's and metrics' tests and
# fuzz harness are in config.mk and http.mk.
CARVED_CORE_OBJ := $(patsubst %.c,$(OBJ)/%.o,carved/main.c carved/api.c carved/registry.c \
                     carved/monitor.c carved/config.c)

include carved/config.mk
include carved/http.mk

$(BIN)/carved: $(CARVED_CORE_OBJ) $(CARVED_HTTP_OBJ) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS) -ljansson -lmicrohttpd -ldl -lpthread

ALL_TARGETS += $(BIN)/carved
