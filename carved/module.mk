# carved: the node daemon (build/bin/carved); its config parser's and metrics' tests and
# fuzz harness are in config.mk and http.mk.
CARVED_CORE_OBJ := $(patsubst %.c,$(OBJ)/%.o,carved/main.c carved/api.c carved/registry.c \
                     carved/monitor.c carved/config.c carved/groups.c)

include carved/config.mk
include carved/http.mk

$(BIN)/carved: $(CARVED_CORE_OBJ) $(CARVED_HTTP_OBJ) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS) -ljansson -lmicrohttpd -ldl -lpthread

ALL_TARGETS += $(BIN)/carved

# Fuzz harness of the socket protocol (clang, not part of `all'; run by `make fuzz-smoke'):
# the request handler with the registry and the common code, as carved links them.
FUZZ_DIR ?= $(BUILD)/fuzz
FUZZ_API_SRC := tests/fuzz/fuzz_api.c carved/api.c carved/registry.c carved/monitor.c carved/config.c \
	carved/groups.c \
	$(wildcard common/*.c)
$(FUZZ_DIR)/fuzz_api: $(FUZZ_API_SRC) carved/daemon.h carved/carved.h carved/groups.h \
	$(wildcard common/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -Icarved $(FUZZ_API_SRC) -o $@ -ljansson -ldl -lpthread

# Unit test of groups.c, with NSS's getpwuid and getgrouplist replaced by the test's fakes.
TEST_GROUPS := $(TESTDIR)/unit/test_groups
$(TEST_GROUPS): $(OBJ)/tests/unit/test_groups.o $(OBJ)/carved/groups.o
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS) -lcmocka -Wl,--wrap=getpwuid,--wrap=getgrouplist
$(OBJ)/tests/unit/test_groups.o: CFLAGS += -Icarved

ALL_TARGETS  += $(TEST_GROUPS)
TEST_TARGETS += $(TEST_GROUPS)
