// saxpy.mlir - A GPU function as MLIR's own gpu dialect lowers it, for the
// runtime's launch test (mlir_gpu_test.c). y = a * x + y over n elements,
// one thread per element in blocks of 256, compiled by this build's LLVM
// (mlir-opt's gpu-lower-to-nvvm-pipeline, a fatbin made with the CUDA
// Toolkit's ptxas, mlir-translate, llc) into an object that calls exactly
// the mgpu* functions MLIR 22 emits: mgpuModuleLoad from a global
// constructor, mgpuModuleGetFunction + mgpuStreamCreate + mgpuLaunchKernel +
// mgpuStreamSynchronize + mgpuStreamDestroy per launch, mgpuModuleUnload from
// a global destructor.
module attributes {gpu.container_module} {
  func.func @saxpy(%a: f32, %x: memref<?xf32>, %y: memref<?xf32>)
      attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c255 = arith.constant 255 : index
    %c256 = arith.constant 256 : index
    %n = memref.dim %x, %c0 : memref<?xf32>
    %m = arith.addi %n, %c255 : index
    %blocks = arith.divui %m, %c256 : index
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %blocks, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
      %base = arith.muli %bx, %c256 : index
      %i = arith.addi %base, %tx : index
      %inside = arith.cmpi ult, %i, %n : index
      scf.if %inside {
        %xv = memref.load %x[%i] : memref<?xf32>
        %yv = memref.load %y[%i] : memref<?xf32>
        %p = arith.mulf %a, %xv : f32
        %s = arith.addf %p, %yv : f32
        memref.store %s, %y[%i] : memref<?xf32>
      }
      gpu.terminator
    }
    return
  }
}
