# tests: unit tests (cmocka, one binary per feature) and end-to-end programs and scripts.
-include tests/unit/module.mk
-include tests/e2e/module.mk
-include tests/fuzz/module.mk

$(OBJ)/tests/%.o: CFLAGS += -Itests
