# bench: microbenchmarks and the demo's tenant program, all driver-API programs that
# dlopen libcuda.so.1 (see bench/cuda_load.h), so they run on the simulated and a real GPU.
BENCH_BIN  := $(BUILD)/bench
BENCH_LOAD := $(OBJ)/bench/cuda_load.o

ALL_TARGETS += $(BENCH_BIN)/overhead $(BENCH_BIN)/memhog $(BENCH_BIN)/compute_load

$(BENCH_BIN)/overhead: $(OBJ)/bench/overhead.o $(BENCH_LOAD)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ -ldl

$(BENCH_BIN)/memhog: $(OBJ)/bench/memhog.o $(BENCH_LOAD)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ -ldl

$(BENCH_BIN)/compute_load: $(OBJ)/bench/compute_load.o $(BENCH_LOAD)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ -ldl

# cuMemUnmap and cuMemRelease per page with thousands of pages mapped (PyTorch's expandable
# segments)
ALL_TARGETS += $(BENCH_BIN)/vmm_unmap
$(BENCH_BIN)/vmm_unmap: $(OBJ)/bench/vmm_unmap.o $(BENCH_LOAD)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ -ldl

# the load generator of bench/carved-bench.sh (socket requests and carve run start-ups)
ALL_TARGETS += $(BENCH_BIN)/carved_bench
$(BENCH_BIN)/carved_bench: $(OBJ)/bench/carved_bench.o
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@

# the driver facts carve's memory accounting rests on (bench/gpu/run-driver-facts.sh): a plain
# process, no carve; NVML by dlopen too, its process list read by common/nvml_procs.c
ALL_TARGETS += $(BENCH_BIN)/driver_facts
$(BENCH_BIN)/driver_facts: $(OBJ)/bench/gpu/driver_facts.o $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ -ldl
