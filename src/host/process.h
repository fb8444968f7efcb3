/* host/process.h: the fabric a process uses by default, and so whether it
 * is one of mpirun's processes (host/process.c). */
#ifndef PLD_HOST_PROCESS_H
#define PLD_HOST_PROCESS_H

/* The one rule for the fabric a program gets when its configuration
 * names none: PLD_FABRIC if set ("mpi": the MPI fabric), else the MPI
 * fabric when mpirun started this process and the build has MPI.  1 for
 * the MPI fabric, 0 for shm. */
int pld__fabric_is_mpi(void);

#endif
