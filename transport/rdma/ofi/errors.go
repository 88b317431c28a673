//go:build ofi && cgo && linux

package ofi

import (
	"fmt"
	"syscall"

	"github.com/rdmactor/rdmactor/transport/rdma"
)

// FabricError is a libfabric failure: the call (or completion) that failed,
// its FI_E* code and fi_strerror's text, plus the provider's own message
// when a CQ error entry carried one (fi_cq_strerror). It matches
// rdma.ErrNotSupported for -FI_ENOSYS, -FI_EOPNOTSUPP and -FI_ENODATA (no
// provider matched), and unwraps to the syscall.Errno of the same number
// for the codes libfabric shares with errno (FI_EAGAIN, FI_ECONNREFUSED...).
type FabricError struct {
	Op      string // e.g. "fi_mr_reg", "write completion"
	Code    int    // positive FI_E* code
	ProvErr int    // provider-specific error (CQ error entries), 0 if none
	Msg     string // provider message (CQ error entries), "" if none
}

// newFabricError wraps a libfabric return code (negative, as the calls
// return them, or positive).
func newFabricError(op string, ret int) *FabricError {
	if ret < 0 {
		ret = -ret
	}
	return &FabricError{Op: op, Code: ret}
}

func (e *FabricError) Error() string {
	s := fmt.Sprintf("%s: %s (-%s)", e.Op, strerror(e.Code), codeName(e.Code))
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	if e.ProvErr != 0 {
		s += fmt.Sprintf(" [prov_errno %d]", e.ProvErr)
	}
	return s
}

// Is reports whether target is rdma.ErrNotSupported for the codes that
// mean "not supported".
func (e *FabricError) Is(target error) bool {
	return target == rdma.ErrNotSupported && (e.Code == codeNoSys || e.Code == codeOpNotSupp || e.Code == codeNoData)
}

// Unwrap returns the errno of the same number for codes below 256 (where
// libfabric reuses errno values, fi_errno.h).
func (e *FabricError) Unwrap() error {
	if e.Code > 0 && e.Code < 256 {
		return syscall.Errno(e.Code)
	}
	return nil
}

// codeName names the FI_E* codes (fi_errno.h) the provider meets; others
// print as their number.
func codeName(code int) string {
	switch code {
	case int(syscall.EPERM):
		return "FI_EPERM"
	case int(syscall.ENOENT):
		return "FI_ENOENT"
	case int(syscall.EINTR):
		return "FI_EINTR"
	case int(syscall.EIO):
		return "FI_EIO"
	case int(syscall.E2BIG):
		return "FI_E2BIG"
	case int(syscall.EBADF):
		return "FI_EBADF"
	case int(syscall.EAGAIN):
		return "FI_EAGAIN"
	case int(syscall.ENOMEM):
		return "FI_ENOMEM"
	case int(syscall.EACCES):
		return "FI_EACCES"
	case int(syscall.EFAULT):
		return "FI_EFAULT"
	case int(syscall.EBUSY):
		return "FI_EBUSY"
	case int(syscall.ENODEV):
		return "FI_ENODEV"
	case int(syscall.EINVAL):
		return "FI_EINVAL"
	case int(syscall.EMFILE):
		return "FI_EMFILE"
	case int(syscall.ENOSPC):
		return "FI_ENOSPC"
	case int(syscall.ENOSYS):
		return "FI_ENOSYS"
	case int(syscall.ENOMSG):
		return "FI_ENOMSG"
	case int(syscall.ENODATA):
		return "FI_ENODATA"
	case int(syscall.EOVERFLOW):
		return "FI_EOVERFLOW"
	case int(syscall.EMSGSIZE):
		return "FI_EMSGSIZE"
	case int(syscall.ENOPROTOOPT):
		return "FI_ENOPROTOOPT"
	case int(syscall.EOPNOTSUPP):
		return "FI_EOPNOTSUPP"
	case int(syscall.EADDRINUSE):
		return "FI_EADDRINUSE"
	case int(syscall.EADDRNOTAVAIL):
		return "FI_EADDRNOTAVAIL"
	case int(syscall.ENETDOWN):
		return "FI_ENETDOWN"
	case int(syscall.ENETUNREACH):
		return "FI_ENETUNREACH"
	case int(syscall.ECONNABORTED):
		return "FI_ECONNABORTED"
	case int(syscall.ECONNRESET):
		return "FI_ECONNRESET"
	case int(syscall.EISCONN):
		return "FI_EISCONN"
	case int(syscall.ENOTCONN):
		return "FI_ENOTCONN"
	case int(syscall.ESHUTDOWN):
		return "FI_ESHUTDOWN"
	case int(syscall.ETIMEDOUT):
		return "FI_ETIMEDOUT"
	case int(syscall.ECONNREFUSED):
		return "FI_ECONNREFUSED"
	case int(syscall.EHOSTDOWN):
		return "FI_EHOSTDOWN"
	case int(syscall.EHOSTUNREACH):
		return "FI_EHOSTUNREACH"
	case int(syscall.EALREADY):
		return "FI_EALREADY"
	case int(syscall.EINPROGRESS):
		return "FI_EINPROGRESS"
	case int(syscall.ECANCELED):
		return "FI_ECANCELED"
	case int(syscall.EKEYREJECTED):
		return "FI_EKEYREJECTED"
	}
	switch code - 256 { // FI_ERRNO_OFFSET
	case 0:
		return "FI_EOTHER"
	case 1:
		return "FI_ETOOSMALL"
	case 2:
		return "FI_EOPBADSTATE"
	case 3:
		return "FI_EAVAIL"
	case 4:
		return "FI_EBADFLAGS"
	case 5:
		return "FI_ENOEQ"
	case 6:
		return "FI_EDOMAIN"
	case 7:
		return "FI_ENOCQ"
	case 8:
		return "FI_ECRC"
	case 9:
		return "FI_ETRUNC"
	case 10:
		return "FI_ENOKEY"
	case 11:
		return "FI_ENOAV"
	case 12:
		return "FI_EOVERRUN"
	case 13:
		return "FI_ENORX"
	}
	return fmt.Sprintf("FI_E#%d", code)
}
