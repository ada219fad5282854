# simgpu: carve's simulated GPU, a libcuda.so.1 and libnvidia-ml.so.1 of its own (and a small
# nvidia-smi), so every component runs and is tested without a GPU.
# -Bsymbolic: calls inside a simulated library never go back out through an interposer.
# the MIG emulation (sim_mig.c) judges layouts with carve's own tables and planner rules
SIMDEV_OBJ   := $(OBJ)/simgpu/simdev.o $(OBJ)/simgpu/sim_sched.o $(OBJ)/simgpu/sim_mig.o $(OBJ)/planner/mig_profiles.o \
                $(OBJ)/planner/mig_geometry.o
# the driver API, one file a job (sim_cuda.h says what they share)
SIM_CUDA_OBJ := $(OBJ)/simgpu/sim_cuda.o $(OBJ)/simgpu/sim_mem.o $(OBJ)/simgpu/sim_pool.o \
                $(OBJ)/simgpu/sim_exec.o $(OBJ)/simgpu/sim_graph.o
SIM_CUDA     := $(SIMDIR)/libcuda.so.1
SIM_NVML     := $(SIMDIR)/libnvidia-ml.so.1
SIM_SMI      := $(SIMDIR)/bin/nvidia-smi

$(SIM_CUDA): $(SIM_CUDA_OBJ) $(SIMDEV_OBJ) $(OBJ)/simgpu/sim_mps.o $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic -o $@ $^ $(LDFLAGS) -lpthread -lrt
	ln -sf libcuda.so.1 $(SIMDIR)/libcuda.so

$(SIM_NVML): $(OBJ)/simgpu/sim_nvml.o $(SIMDEV_OBJ) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,libnvidia-ml.so.1 -Wl,-Bsymbolic -o $@ $^ $(LDFLAGS) -lpthread -lrt
	ln -sf libnvidia-ml.so.1 $(SIMDIR)/libnvidia-ml.so

$(SIMDIR)/libcuda.so: $(SIM_CUDA)
$(SIMDIR)/libnvidia-ml.so: $(SIM_NVML)

$(SIM_SMI): $(OBJ)/simgpu/nvidia_smi.o $(SIM_NVML)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(OBJ)/simgpu/nvidia_smi.o $(LDFLAGS) -L$(SIMDIR) -lnvidia-ml \
		-Wl,-rpath,'$$ORIGIN/..'

ALL_TARGETS += $(SIM_CUDA) $(SIM_NVML) $(SIM_SMI)

# tests/e2e/sim_check: a driver-API program checking the simulated GPU itself.
$(TESTDIR)/e2e/sim_check: $(OBJ)/tests/e2e/sim_check.o $(SIM_CUDA) $(SIM_NVML)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(OBJ)/tests/e2e/sim_check.o $(LDFLAGS) -L$(SIMDIR) -lcuda -lnvidia-ml \
		-Wl,-rpath,'$$ORIGIN/../../lib/carve/sim'
ALL_TARGETS += $(TESTDIR)/e2e/sim_check

# nvidia-cuda-mps-control: the MPS control program's stand-in (carve run --mode mps)
SIM_MPS_CONTROL := $(SIMDIR)/bin/nvidia-cuda-mps-control
$(SIM_MPS_CONTROL): $(OBJ)/simgpu/mps_control.o $(OBJ)/simgpu/sim_mps.o $(OBJ)/common/proc.o
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS)
ALL_TARGETS += $(SIM_MPS_CONTROL)

# nvidia-cuda-mps-server: the MPS server's stand-in, started by the control daemon's
SIM_MPS_SERVER := $(SIMDIR)/bin/nvidia-cuda-mps-server
$(SIM_MPS_SERVER): $(OBJ)/simgpu/mps_server.o $(SIM_CUDA)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $(OBJ)/simgpu/mps_server.o $(LDFLAGS) -L$(SIMDIR) -lcuda \
		-Wl,-rpath,'$$ORIGIN/..'
ALL_TARGETS += $(SIM_MPS_SERVER)

# tests/e2e/noreap: a parent that reaps only its command, as a container's PID 1 may (mps.sh)
$(TESTDIR)/e2e/noreap: $(OBJ)/tests/e2e/noreap.o
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LDFLAGS)
ALL_TARGETS += $(TESTDIR)/e2e/noreap

# tests/e2e/clock_step.so: a preload that steps a process's wall clock (carved_reclaim.sh)
$(TESTDIR)/e2e/clock_step.so: $(OBJ)/tests/e2e/clock_step.o
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $^ $(LDFLAGS) -ldl
ALL_TARGETS += $(TESTDIR)/e2e/clock_step.so
