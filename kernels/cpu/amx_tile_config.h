// The tile configuration of Intel's AMX, shared by its two users: the
// prompt's Linear (matmul_rows16_amx-inl.h, a file built with AMX's flags)
// and attention's bf16 products (attention_bf16-inl.h, functions with AMX's
// target attribute). Data and a macro only: an inline function here would
// be compiled with different flags in each, and the linker could keep
// either copy.
#pragma once

#include <cstdint>

namespace pocket::cpu {

// The 64-byte operand of LDTILECFG (palette 1: 8 tiles of up to 16 rows of
// 64 bytes). Tiles a kernel does not use keep rows and bytes 0.
struct alignas(64) TileConfig {
  uint8_t palette;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t bytes_per_row[16];
  uint8_t rows[16];
};

}  // namespace pocket::cpu

// Loads `config` (a TileConfig) into the tile unit. GCC 12's
// _tile_loadconfig tells the compiler it reads 8 bytes of the config, so
// without the empty asm the stores of the rest may be dropped.
#define POCKET_LOAD_TILE_CONFIG(config)              \
  do {                                               \
    __asm__ volatile("" : : "m"(config) : "memory"); \
    _tile_loadconfig(&(config));                     \
  } while (0)
