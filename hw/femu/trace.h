#include "trace/trace-hw_femu.h"
