#ifndef CFIDO2_SHIM_H
#define CFIDO2_SHIM_H
#include <fido.h>
#endif
