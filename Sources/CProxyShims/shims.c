#include "CProxyShims.h"

unsigned long CProxyShims_XN_FLAG_RFC2253(void) { return XN_FLAG_RFC2253; }
