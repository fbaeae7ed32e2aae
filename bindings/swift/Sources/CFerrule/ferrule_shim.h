/* The C ABI, as the checkout's header declares it. */
#include "../../../../include/ferrule.h"
