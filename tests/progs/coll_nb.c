/* coll.c with every collective in its nonblocking form (see coll.c). */
#define COLL_NB 1
#include "coll.c"
