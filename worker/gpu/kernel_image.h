// The fill/verify kernels (kernels.cu) as a fatbin embedded in the library at build time.
#pragma once

#include <cstddef>

namespace gdrmesh {

struct GpuKernelImage {
  const void* data = nullptr;  // nullptr when the library was built without the kernels
  size_t size = 0;
  const char* note = "";  // how it was built ("sm_75 sm_80 ... + compute_75 PTX"), or why not
};

GpuKernelImage gpuKernelImage();

}  // namespace gdrmesh
