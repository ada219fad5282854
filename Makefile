# Top-level build: every component keeps its rules in its own module.mk; this file holds
# the shared flags and the variants (gcc, clang, sanitizers) so that no component repeats them.

CC      ?= cc
BUILD   ?= build
SAN     ?=
CSTD     = -std=c11 -D_GNU_SOURCE
WARN     = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wno-unused-parameter
OPT     ?= -O2 -g
ifneq ($(findstring clang,$(CC)),)
  OPT   += -gdwarf-4 # valgrind 3.19 (Debian 12) cannot read clang 14's default DWARF 5
endif
CFLAGS  += $(CSTD) $(WARN) $(OPT) -fPIC -fvisibility=hidden -Iinclude -Icommon
LDFLAGS +=
ifeq ($(SAN),1)
  CFLAGS  += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
  LDFLAGS += -fsanitize=address,undefined
endif
# ThreadSanitizer, for what runs on threads (the planner's mechanisms, carved): by hand, e.g.
#   make SAN=thread BUILD=build-tsan build-tsan/tests/unit/test_fleet
ifeq ($(SAN),thread)
  CFLAGS  += -fsanitize=thread -fno-omit-frame-pointer
  LDFLAGS += -fsanitize=thread
endif

BIN     = $(BUILD)/bin
LIBDIR  = $(BUILD)/lib/carve
SIMDIR  = $(LIBDIR)/sim
TESTDIR = $(BUILD)/tests
OBJ     = $(BUILD)/obj

ALL_TARGETS  :=
TEST_TARGETS :=

.PHONY: all clean test check demo
all: real-all

include common/module.mk
include planner/module.mk
include libcarve/module.mk
include simgpu/module.mk
include cli/module.mk
include carved/module.mk
include tests/module.mk
include bench/module.mk
include slurm/module.mk
include planner/fleet.mk
include install.mk

real-all: $(ALL_TARGETS)

# product: carve without its unit tests, for machines that lack cmocka (the GPU runs)
.PHONY: product
product: $(filter-out $(TEST_TARGETS),$(ALL_TARGETS))

$(OBJ)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

-include $(shell find $(OBJ) -name '*.d' 2>/dev/null)

clean:
	rm -rf build build-*
