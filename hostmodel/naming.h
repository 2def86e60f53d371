// Names derived from devices: resource names / CDI kinds and model names.
#pragma once

#include <cstdint>
#include <string>

#include "hostmodel/selection.h"

namespace vfio_gpu {

// "nvidia.com", "amd.com", "intel.com"; "vfio-gpu.io" for other vendors.
std::string VendorDomain(uint16_t vendor);

// Model name: the curated table of datacenter parts first, pci.ids (libpci) second, "" last.
std::string ModelName(uint16_t vendor, uint16_t device);

// Per-model resource name part, e.g. "GA102GL_A10" for 10de:2236; "device-2236" when no name is
// known. Always a valid CDI class and resource name part: [A-Za-z][A-Za-z0-9_-]*[A-Za-z0-9], at
// most 28 characters, so the whole resource name stays within 40.
std::string ModelResourcePart(uint16_t vendor, uint16_t device);

// The resource name (= CDI kind) for a GPU or NVSwitch under `selection`.
std::string GpuResourceName(const Selection& selection, uint16_t vendor, uint16_t device);

// Validity checks for names we generate and accept (CDI rules; kubelet resource rules).
bool IsValidCdiKind(const std::string& kind);        // vendor/class
bool IsValidCdiDeviceName(const std::string& name);  // device
bool IsValidResourceName(const std::string& name);   // domain/name, name <= 63

}  // namespace vfio_gpu
