// kina-entry-points refuses a Kina signature that does not fit the function
// (readKinaSignature, src/passes/IRConventions.cpp) and an entry symbol
// that is taken, each with an error at the function.
// RUN: %kina-opt %s --split-input-file --kina-entry-points --verify-diagnostics

// expected-error @+1 {{'kina.param_names' has 1 names for 2 arguments}}
func.func @names(%x: memref<4xf32>, %y: memref<4xf32>) -> memref<4xf32> attributes {kina.param_dims = [["4"], ["4"]], kina.param_names = ["x"], kina.result_dims = [["4"]]} {
  return %x : memref<4xf32>
}

// -----

// expected-error @+1 {{'kina.param_dims' is missing or not an array}}
func.func @no_dims(%x: memref<4xf32>) -> memref<4xf32> attributes {kina.param_names = ["x"], kina.result_dims = [["4"]]} {
  return %x : memref<4xf32>
}

// -----

// expected-error @+1 {{'kina.param_dims' entry 0 has 1 dims, but argument 0 has type 'memref<4x2xf32>'}}
func.func @rank(%x: memref<4x2xf32>) -> memref<4x2xf32> attributes {kina.param_dims = [["4"]], kina.param_names = ["x"], kina.result_dims = [["4", "2"]]} {
  return %x : memref<4x2xf32>
}

// -----

// expected-error @+1 {{'kina.param_dims' entry 0 dim 0 is '5', but argument 0 has type 'memref<4xf32>'}}
func.func @static_size(%x: memref<4xf32>) -> memref<4xf32> attributes {kina.param_dims = [["5"]], kina.param_names = ["x"], kina.result_dims = [["4"]]} {
  return %x : memref<4xf32>
}

// -----

// expected-error @+1 {{'kina.param_dims' entry 0 dim 0 is 'N', but argument 0 has type 'memref<4xf32>'}}
func.func @symbol_on_static(%x: memref<4xf32>) -> memref<4xf32> attributes {kina.param_dims = [["N"]], kina.param_names = ["x"], kina.result_dims = [["4"]]} {
  return %x : memref<4xf32>
}

// -----

// expected-error @+1 {{'kina.result_dims' entry 0 dim 0 is not a size, '?' or a name}}
func.func @bad_dim(%x: memref<?xf32>) -> memref<?xf32> attributes {kina.param_dims = [["?"]], kina.param_names = ["x"], kina.result_dims = [[""]]} {
  return %x : memref<?xf32>
}

// -----

// expected-error @+1 {{'kina.result_dims' has 0 entries for 1 results}}
func.func @results(%x: memref<?xf32>) -> memref<?xf32> attributes {kina.param_dims = [["?"]], kina.param_names = ["x"], kina.result_dims = []} {
  return %x : memref<?xf32>
}

// -----

// expected-error @+1 {{'kina.param_names' holds an entry that is not a name}}
func.func @empty_name(%x: memref<?xf32>) -> memref<?xf32> attributes {kina.param_dims = [["?"]], kina.param_names = [""], kina.result_dims = [["?"]]} {
  return %x : memref<?xf32>
}

// -----

func.func @kina_g(%x: memref<f32>) -> memref<f32> {
  return %x : memref<f32>
}

// expected-error @+1 {{function @g collides with the entry symbol 'kina_g'}}
func.func @g(%x: memref<f32>) -> memref<f32> attributes {kina.param_dims = [[]], kina.param_names = ["x"], kina.result_dims = [[]]} {
  return %x : memref<f32>
}
