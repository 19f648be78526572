// Built when GDRMESH_CUDA_KERNELS is OFF or nvcc was not found: GPU buffers fill and verify
// through host memory.
#include "worker/gpu/kernel_image.h"

namespace gdrmesh {

GpuKernelImage gpuKernelImage() {
  GpuKernelImage image;
  image.note = "built without GPU kernels (GDRMESH_CUDA_KERNELS=OFF or no nvcc at build time)";
  return image;
}

}  // namespace gdrmesh
