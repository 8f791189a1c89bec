// A real kernel pair to try kernlint on: the naive transpose and the tiled one from NVIDIA's
// "An Efficient Matrix Transpose in CUDA C/C++" (Mark Harris, 2013), written here from that recipe.
#define TILE_DIM 32
#define BLOCK_ROWS 8

// Reads rows (coalesced) and writes columns: each lane of a warp stores h floats apart.
__global__ void transposeNaive(float* odata, const float* idata, int width, int height) {
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        odata[x * height + (y + j)] = idata[(y + j) * width + x];
}

// Stages a tile through shared memory so both global accesses walk rows.
__global__ void transposeCoalesced(float* odata, const float* idata, int width, int height) {
    __shared__ float tile[TILE_DIM][TILE_DIM + 1];
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * TILE_DIM + threadIdx.x;
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

int main() {
    const int width = 4096, height = 4096;
    float *d_in = 0, *d_out = 0;
    dim3 grid(width / TILE_DIM, height / TILE_DIM);
    dim3 block(TILE_DIM, BLOCK_ROWS);
    transposeNaive<<<grid, block>>>(d_out, d_in, width, height);
    transposeCoalesced<<<grid, block>>>(d_out, d_in, width, height);
    return 0;
}
