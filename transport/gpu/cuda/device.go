package cuda

import (
	"fmt"
	"strings"
)

// Device is one GPU, by ordinal (cuDeviceGet).
type Device struct {
	ordinal int
	h       int32 // CUdevice
}

// DeviceCount is the number of GPUs the driver shows this process
// (respecting CUDA_VISIBLE_DEVICES).
func DeviceCount() (int, error) {
	if err := loaded(); err != nil {
		return 0, err
	}
	var n int32
	if err := check("cuDeviceGetCount", fnDeviceGetCount(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// GetDevice returns GPU ordinal i, 0 <= i < DeviceCount().
func GetDevice(i int) (Device, error) {
	if err := loaded(); err != nil {
		return Device{}, err
	}
	var h int32
	if err := check("cuDeviceGet", fnDeviceGet(&h, int32(i))); err != nil {
		return Device{}, fmt.Errorf("device %d: %w", i, err)
	}
	return Device{ordinal: i, h: h}, nil
}

// Ordinal is the device's index as GetDevice took it.
func (d Device) Ordinal() int { return d.ordinal }

// Name is the product name, e.g. "NVIDIA H200".
func (d Device) Name() (string, error) {
	b := make([]byte, 256)
	if err := check("cuDeviceGetName", fnDeviceGetName(&b[0], int32(len(b)), d.h)); err != nil {
		return "", err
	}
	return cTrim(b), nil
}

// Attribute reads a device attribute (cuDeviceGetAttribute).
func (d Device) Attribute(a DeviceAttribute) (int, error) {
	var v int32
	if err := check("cuDeviceGetAttribute", fnDeviceGetAttribute(&v, int32(a), d.h)); err != nil {
		return 0, fmt.Errorf("device %d attribute %d: %w", d.ordinal, a, err)
	}
	return int(v), nil
}

// ComputeCapability returns the SM version, e.g. 9, 0 for Hopper.
func (d Device) ComputeCapability() (major, minor int, err error) {
	if major, err = d.Attribute(AttrComputeCapabilityMajor); err != nil {
		return 0, 0, err
	}
	if minor, err = d.Attribute(AttrComputeCapabilityMinor); err != nil {
		return 0, 0, err
	}
	return major, minor, nil
}

// Arch is the NVRTC architecture option value for this device, e.g.
// "sm_90".
func (d Device) Arch() (string, error) {
	ma, mi, err := d.ComputeCapability()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("sm_%d%d", ma, mi), nil
}

// PCIBusID is the device's PCI address, e.g. "0000:18:00.0": two ranks
// with equal IDs share one GPU.
func (d Device) PCIBusID() (string, error) {
	b := make([]byte, 64)
	if err := check("cuDeviceGetPCIBusId", fnDeviceGetPCIBusId(&b[0], int32(len(b)), d.h)); err != nil {
		return "", err
	}
	return strings.ToLower(cTrim(b)), nil
}

// CanAccessPeer reports whether d can map p's memory (NVLink or PCIe peer
// to peer; cuDeviceCanAccessPeer). A device is its own peer.
func (d Device) CanAccessPeer(p Device) (bool, error) {
	if d.h == p.h {
		return true, nil
	}
	var can int32
	if err := check("cuDeviceCanAccessPeer", fnDeviceCanAccessPeer(&can, d.h, p.h)); err != nil {
		return false, err
	}
	return can != 0, nil
}

// cTrim returns b up to its first NUL.
func cTrim(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
