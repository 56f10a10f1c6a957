"""Schemas of the extra reductions, scans, indexing and structure ops (PyTorch 2.13's own)."""

SCHEMAS = """
nansum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
nanmean(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
median(Tensor self) -> Tensor
median.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
nanmedian(Tensor self) -> Tensor
nanmedian.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
mode(Tensor self, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)
kthvalue(Tensor self, SymInt k, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)
aminmax(Tensor self, *, int? dim=None, bool keepdim=False) -> (Tensor min, Tensor max)
cummax(Tensor self, int dim) -> (Tensor values, Tensor indices)
cummin(Tensor self, int dim) -> (Tensor values, Tensor indices)
logcumsumexp(Tensor self, int dim) -> Tensor
index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor
index_add_(Tensor(a!) self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor(a!)
index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor
index_copy_(Tensor(a!) self, int dim, Tensor index, Tensor source) -> Tensor(a!)
index_fill.int_Tensor(Tensor self, int dim, Tensor index, Tensor value) -> Tensor
index_fill.int_Scalar(Tensor self, int dim, Tensor index, Scalar value) -> Tensor
index_fill_.int_Tensor(Tensor(a!) self, int dim, Tensor index, Tensor value) -> Tensor(a!)
index_fill_.int_Scalar(Tensor(a!) self, int dim, Tensor index, Scalar value) -> Tensor(a!)
masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor
masked_scatter_(Tensor(a!) self, Tensor mask, Tensor source) -> Tensor(a!)
scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True) -> Tensor
scatter_reduce_.two(Tensor(a!) self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True) -> Tensor(a!)
take(Tensor self, Tensor index) -> Tensor
take_along_dim(Tensor self, Tensor indices, int? dim=None) -> Tensor
put(Tensor self, Tensor index, Tensor source, bool accumulate=False) -> Tensor
put_(Tensor(a!) self, Tensor index, Tensor source, bool accumulate=False) -> Tensor(a!)
diag(Tensor self, int diagonal=0) -> Tensor
diag_embed(Tensor self, int offset=0, int dim1=-2, int dim2=-1) -> Tensor
diagflat(Tensor self, int offset=0) -> Tensor
diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None) -> Tensor
trace(Tensor self) -> Tensor
rot90(Tensor self, int k=1, int[] dims=[0, 1]) -> Tensor
kron(Tensor self, Tensor other) -> Tensor
inner(Tensor self, Tensor other) -> Tensor
ger(Tensor self, Tensor vec2) -> Tensor
histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0) -> Tensor
bincount(Tensor self, Tensor? weights=None, SymInt minlength=0) -> Tensor
tensor_split.sections(Tensor(a -> *) self, SymInt sections, int dim=0) -> Tensor(a)[]
tensor_split.indices(Tensor(a -> *) self, SymInt[] indices, int dim=0) -> Tensor(a)[]
tensor_split.tensor_indices_or_sections(Tensor(a -> *) self, Tensor tensor_indices_or_sections, int dim=0) -> Tensor(a)[]
hsplit.int(Tensor(a -> *) self, int sections) -> Tensor(a)[]
hsplit.array(Tensor(a -> *) self, int[] indices) -> Tensor(a)[]
vsplit.int(Tensor(a -> *) self, int sections) -> Tensor(a)[]
vsplit.array(Tensor(a -> *) self, int[] indices) -> Tensor(a)[]
dsplit.int(Tensor(a -> *) self, int sections) -> Tensor(a)[]
dsplit.array(Tensor(a -> *) self, int[] indices) -> Tensor(a)[]
unsafe_chunk(Tensor self, int chunks, int dim=0) -> Tensor[]
unsafe_split.Tensor(Tensor self, SymInt split_size, int dim=0) -> Tensor[]
unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)
broadcast_to(Tensor(a) self, SymInt[] size) -> Tensor(a)
ravel(Tensor(a) self) -> Tensor(a)
swapaxes_(Tensor(a!) self, int axis0, int axis1) -> Tensor(a!)
swapdims_(Tensor(a!) self, int dim0, int dim1) -> Tensor(a!)
transpose_(Tensor(a!) self, int dim0, int dim1) -> Tensor(a!)
t_(Tensor(a!) self) -> Tensor(a!)
squeeze_(Tensor(a!) self) -> Tensor(a!)
squeeze_.dim(Tensor(a!) self, int dim) -> Tensor(a!)
squeeze_.dims(Tensor(a!) self, int[] dim) -> Tensor(a!)
unsqueeze_(Tensor(a!) self, int dim) -> Tensor(a!)
sum_to_size(Tensor self, SymInt[] size) -> Tensor
is_nonzero(Tensor self) -> bool
is_same_size(Tensor self, Tensor other) -> bool
new_empty_strided(Tensor self, SymInt[] size, SymInt[] stride, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor
slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor
diagonal_scatter(Tensor self, Tensor src, int offset=0, int dim1=0, int dim2=1) -> Tensor
"""
