#include "worker/gpu/cuda_api.h"

namespace gdrmesh {

namespace {

// Names for the values this module reasons about, used when the driver cannot name them
// (library missing, or a fake API).
const char* builtinErrorName(cu::CUresult error) {
  switch (error) {
    case cu::CUDA_SUCCESS:
      return "CUDA_SUCCESS";
    case cu::CUDA_ERROR_INVALID_VALUE:
      return "CUDA_ERROR_INVALID_VALUE";
    case cu::CUDA_ERROR_OUT_OF_MEMORY:
      return "CUDA_ERROR_OUT_OF_MEMORY";
    case cu::CUDA_ERROR_NOT_INITIALIZED:
      return "CUDA_ERROR_NOT_INITIALIZED";
    case cu::CUDA_ERROR_STUB_LIBRARY:
      return "CUDA_ERROR_STUB_LIBRARY";
    case cu::CUDA_ERROR_INSUFFICIENT_DRIVER:
      return "CUDA_ERROR_INSUFFICIENT_DRIVER";
    case cu::CUDA_ERROR_DEVICE_UNAVAILABLE:
      return "CUDA_ERROR_DEVICE_UNAVAILABLE";
    case cu::CUDA_ERROR_NO_DEVICE:
      return "CUDA_ERROR_NO_DEVICE";
    case cu::CUDA_ERROR_INVALID_DEVICE:
      return "CUDA_ERROR_INVALID_DEVICE";
    case cu::CUDA_ERROR_INVALID_IMAGE:
      return "CUDA_ERROR_INVALID_IMAGE";
    case cu::CUDA_ERROR_NO_BINARY_FOR_GPU:
      return "CUDA_ERROR_NO_BINARY_FOR_GPU";
    case cu::CUDA_ERROR_ECC_UNCORRECTABLE:
      return "CUDA_ERROR_ECC_UNCORRECTABLE";
    case cu::CUDA_ERROR_INVALID_PTX:
      return "CUDA_ERROR_INVALID_PTX";
    case cu::CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
      return "CUDA_ERROR_UNSUPPORTED_PTX_VERSION";
    case cu::CUDA_ERROR_OPERATING_SYSTEM:
      return "CUDA_ERROR_OPERATING_SYSTEM";
    case cu::CUDA_ERROR_INVALID_HANDLE:
      return "CUDA_ERROR_INVALID_HANDLE";
    case cu::CUDA_ERROR_NOT_FOUND:
      return "CUDA_ERROR_NOT_FOUND";
    case cu::CUDA_ERROR_ILLEGAL_ADDRESS:
      return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case cu::CUDA_ERROR_LAUNCH_FAILED:
      return "CUDA_ERROR_LAUNCH_FAILED";
    case cu::CUDA_ERROR_NOT_SUPPORTED:
      return "CUDA_ERROR_NOT_SUPPORTED";
    case cu::CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
      return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
    case cu::CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
      return "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE";
    case cu::CUDA_ERROR_UNKNOWN:
      return "CUDA_ERROR_UNKNOWN";
    default:
      return nullptr;
  }
}

bool isDmabufCall(const std::string& call) {
  return call.rfind("cuMemGetHandleForAddressRange", 0) == 0;
}

}  // namespace

std::string cudaErrorName(CudaApi& api, cu::CUresult error) {
  const char* name = nullptr;
  if (api.getErrorName(error, &name) == cu::CUDA_SUCCESS && name != nullptr) return name;
  name = builtinErrorName(error);
  return name != nullptr ? name : "CUresult " + std::to_string(error);
}

Status cudaStatus(CudaApi& api, cu::CUresult error, const std::string& call,
                  const std::string& where) {
  if (error == cu::CUDA_SUCCESS) return {};
  std::string msg = call;
  if (!where.empty()) msg += " on " + where;
  msg += " failed: " + cudaErrorName(api, error);
  const char* text = nullptr;
  if (api.getErrorString(error, &text) == cu::CUDA_SUCCESS && text != nullptr) {
    msg += std::string(" (") + text + ")";
  }

  switch (error) {
    case cu::CUDA_ERROR_OUT_OF_MEMORY:
      return Status(Code::kResourceExhausted, msg,
                    "free GPU memory (nvidia-smi shows its users) or use a smaller --size");
    case cu::CUDA_ERROR_INVALID_DEVICE:
      return notFound(msg, "pick a GPU index that `gdrmesh inventory` lists (--gpu N)");
    case cu::CUDA_ERROR_NO_DEVICE:
      return failedPrecondition(msg, "check nvidia-smi and CUDA_VISIBLE_DEVICES on this host");
    case cu::CUDA_ERROR_NOT_SUPPORTED:
      if (isDmabufCall(call)) {
        return failedPrecondition(
            msg,
            "dma-buf export needs an open kernel module (nvidia-open, not the proprietary "
            "one), NVIDIA driver >= 515 and Linux kernel >= 5.12; or register through "
            "nvidia-peermem (--reg-path peermem)");
      }
      return failedPrecondition(msg, "this GPU or driver does not support the operation");
    case cu::CUDA_ERROR_NOT_FOUND:
      if (isDmabufCall(call)) {
        return failedPrecondition(
            msg + ": the driver has no cuMemGetHandleForAddressRange",
            "dma-buf export needs NVIDIA driver >= 515 (CUDA 11.7), an open kernel module and "
            "Linux kernel >= 5.12; or register through nvidia-peermem (--reg-path peermem)");
      }
      return failedPrecondition(msg);
    case cu::CUDA_ERROR_INSUFFICIENT_DRIVER:
    case cu::CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    case cu::CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
    case cu::CUDA_ERROR_STUB_LIBRARY:
      return failedPrecondition(msg,
                                "the user-space driver (libcuda) and the kernel module do not "
                                "match or are too old: reinstall the NVIDIA driver, reboot");
    case cu::CUDA_ERROR_NO_BINARY_FOR_GPU:
    case cu::CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case cu::CUDA_ERROR_INVALID_PTX:
    case cu::CUDA_ERROR_INVALID_IMAGE:
      return failedPrecondition(msg,
                                "the driver is older than the toolkit gdrmesh's GPU kernels "
                                "were built with: update the NVIDIA driver");
    case cu::CUDA_ERROR_ECC_UNCORRECTABLE:
    case cu::CUDA_ERROR_DEVICE_UNAVAILABLE:
      return unavailable(msg, "the GPU is faulty or busy: check nvidia-smi -q and dmesg (Xid)");
    case cu::CUDA_ERROR_INVALID_VALUE:
    case cu::CUDA_ERROR_INVALID_HANDLE:
    case cu::CUDA_ERROR_ILLEGAL_ADDRESS:
      return internalError(msg);
    default:
      return failedPrecondition(msg, "check nvidia-smi and dmesg (Xid errors) on this host");
  }
}

}  // namespace gdrmesh
