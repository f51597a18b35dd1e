/* Wine 8 (Debian 12's) has no bcryptprimitives.dll, from which Rust's
 * standard library (1.78 and later) takes ProcessPrng, so no Rust program for
 * Windows starts under it. This stand-in answers ProcessPrng from
 * advapi32's RtlGenRandom (SystemFunction036), which Wine has. Only for
 * running the tests under Wine: Windows itself ships the real one. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) {
    while (length > 0) {
        ULONG n = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (!SystemFunction036(data, n)) {
            return FALSE;
        }
        data += n;
        length -= n;
    }
    return TRUE;
}
