// generics_types.c compiled as C++ (oshc++): the same calls of every type-generic interface with
// every type of its specification type set, resolved by shmem.h's C++ overloads.
#include "generics_types.c"
