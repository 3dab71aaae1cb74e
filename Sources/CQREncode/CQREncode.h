#ifndef C_QRENCODE_H
#define C_QRENCODE_H
// libqrencode, as Debian ships it (libqrencode-dev): the QR codes of the onboarding URL, in the
// terminal and on the onboarding page.
#include <qrencode.h>
#endif
