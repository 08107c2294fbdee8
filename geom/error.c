#include "base.h"

const char *tdm_strerror(int err)
{
    switch (err) {
    case TDM_OK: return "success";
    case TDM_EINVAL: return "invalid argument";
    case TDM_ENOMEM: return "out of memory";
    case TDM_ERANGE: return "value out of range";
    case TDM_ENONFINITE: return "non-finite number";
    case TDM_EINDEX: return "index out of range";
    case TDM_EEMPTY: return "empty input";
    case TDM_ECORRUPT: return "corrupt data";
    case TDM_EVERSION: return "unsupported version";
    case TDM_EIO: return "i/o error";
    case TDM_EFORMAT: return "malformed file";
    case TDM_ESYS: return "system call failed";
    case TDM_ENODEV: return "no usable GPU";
    case TDM_EGPU: return "CUDA error";
    case TDM_EGPUMEM: return "out of device memory";
    case TDM_ECANCELED: return "cancelled by the caller";
    case TDM_EBUDGET: return "over the work budget";
    case TDM_EAGAIN: return "no room now";
    default: return "unknown error";
    }
}
