# tests/fuzz: libFuzzer harnesses for the parsers (clang only; not part of `all`).
#   make fuzz         builds them into build/fuzz/
#   make fuzz-smoke   runs each for FUZZ_SECONDS on a copy of its seed corpus
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 20
FUZZ_DIR     := $(BUILD)/fuzz
FUZZ_FLAGS   := -std=c11 -D_GNU_SOURCE $(WARN) -g -O1 -Iinclude -Icommon \
                -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined

$(FUZZ_DIR)/fuzz_size: tests/fuzz/fuzz_size.c common/size.c common/size.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) tests/fuzz/fuzz_size.c common/size.c -o $@

.PHONY: fuzz fuzz-smoke
fuzz: $(FUZZ_DIR)/fuzz_size

fuzz-smoke: fuzz
	rm -rf $(FUZZ_DIR)/corpus-size && mkdir -p $(FUZZ_DIR)/corpus-size
	cp tests/fuzz/corpus/size/* $(FUZZ_DIR)/corpus-size/
	$(FUZZ_DIR)/fuzz_size -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
		$(FUZZ_DIR)/corpus-size
