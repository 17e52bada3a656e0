//! The macros the operator modules share: boilerplate that is the same logic in every
//! operator, written once (defined before the operator modules, so in scope in all of them).

/// Writes the planner's layout facts of a [`ShapeRule`](super::ShapeRule) impl, inside the impl
/// (`reads_layout`, `writes_layout`, and `in_place` with `, in_place`):
/// - `layout_facts!(any)`: the inputs in any one layout, the output in the first input's;
/// - `layout_facts!(any, in_place)`: the same, and the output may take the first input's
///   storage ([`InPlace::Allowed`](super::InPlace::Allowed)): the elementwise operators;
/// - `layout_facts!(Layout::FrameMajor)`: every input and the output in that layout;
/// - `layout_facts!(self.layout)`: every input and the output in the layout a field holds;
/// - `, in_place` after either of the last two: and the output may take the first input's
///   storage.
macro_rules! layout_facts {
    (any) => {
        fn reads_layout(&self, _arg: usize) -> Option<$crate::tensor::Layout> {
            None
        }
        fn writes_layout(&self) -> Option<$crate::tensor::Layout> {
            None
        }
    };
    (any, in_place) => {
        layout_facts!(@in_place);
        layout_facts!(any);
    };
    (Layout::$layout:ident, in_place) => {
        layout_facts!(@in_place);
        layout_facts!(Layout::$layout);
    };
    (self.$field:ident, in_place) => {
        layout_facts!(@in_place);
        layout_facts!(self.$field);
    };
    (@in_place) => {
        fn in_place(&self) -> $crate::ops::InPlace {
            $crate::ops::InPlace::Allowed
        }
    };
    (Layout::$layout:ident) => {
        fn reads_layout(&self, _arg: usize) -> Option<$crate::tensor::Layout> {
            Some(Layout::$layout)
        }
        fn writes_layout(&self) -> Option<$crate::tensor::Layout> {
            Some(Layout::$layout)
        }
    };
    (self.$field:ident) => {
        fn reads_layout(&self, _arg: usize) -> Option<$crate::tensor::Layout> {
            Some(self.$field)
        }
        fn writes_layout(&self) -> Option<$crate::tensor::Layout> {
            Some(self.$field)
        }
    };
}

// The blocks (`crate::blocks`) state their layouts with it too.
pub(crate) use layout_facts;

/// Writes `const` builder methods of a geometry that each set the field of their name:
/// `$field: $ty;` writes `pub const fn $field(mut self, $field: $ty) -> Self`, with the
/// doc comments given before it.
macro_rules! field_setters {
    ($($(#[$doc:meta])* $field:ident: $ty:ty;)*) => {
        $(
            $(#[$doc])*
            pub const fn $field(mut self, $field: $ty) -> Self {
                self.$field = $field;
                self
            }
        )*
    };
}

// The blocks (`crate::blocks`) write their setters with it too.
pub(crate) use field_setters;

/// Writes the accessors of an operator with weights (see the [`ops` docs](super)):
/// `geometry()` (field `geometry`), `packed_weight()` (the weights in the kernel's layout,
/// field `$weight` of elements `$elem`) and, when the operator has one, `bias()` (field
/// `$bias: Option<S>`), each with the given doc line.
macro_rules! weight_accessors {
    (
        $geometry:ty,
        $weight:ident: [$elem:ty], $weight_doc:expr
        $(, $bias:ident, $bias_doc:expr)?
    ) => {
        /// The geometry.
        pub fn geometry(&self) -> $geometry {
            self.geometry
        }

        #[doc = $weight_doc]
        pub fn packed_weight(&self) -> &[$elem] {
            self.$weight.as_ref()
        }

        $(
            #[doc = $bias_doc]
            pub fn bias(&self) -> Option<&[f32]> {
                self.$bias.as_ref().map(AsRef::as_ref)
            }
        )?
    };
}

/// Writes the constructors of an f32 operator with a packed weight and an optional bias
/// (see the [`ops` docs](super)), each with the doc comments given before its name:
/// - `new` (feature `alloc`): packs `weight` with `$pack` (`fn(&geometry, &[f32]) ->
///   Result<Vec<f32>, Error>`) and takes `bias` by value;
/// - `from_slice` (feature `alloc`): packs `weight` likewise and copies `bias`;
/// - `from_packed($geometry, $packed, $bias)`: validates the geometry, runs `$check` (on
///   the three parameters) and builds the operator (fields `geometry`, `$field` and `bias`).
macro_rules! weight_constructors {
    (
        $op:ident, $geometry_ty:ty, $pack:expr;
        $(#[$new_doc:meta])*
        new;
        $(#[$slice_doc:meta])*
        from_slice;
        $(#[$packed_doc:meta])*
        from_packed($geometry:ident, $packed:ident, $bias:ident) => $check:block -> $field:ident
    ) => {
        #[cfg(feature = "alloc")]
        impl $op<Vec<f32>> {
            $(#[$new_doc])*
            pub fn new(
                geometry: $geometry_ty,
                weight: Vec<f32>,
                bias: Option<Vec<f32>>,
            ) -> Result<Self, Error> {
                let packed = $pack(&geometry, &weight)?;
                Self::from_packed(geometry, packed, bias)
            }

            $(#[$slice_doc])*
            pub fn from_slice(
                geometry: $geometry_ty,
                weight: &[f32],
                bias: Option<&[f32]>,
            ) -> Result<Self, Error> {
                let packed = $pack(&geometry, weight)?;
                Self::from_packed(geometry, packed, bias.map(<[f32]>::to_vec))
            }
        }

        impl<S: AsRef<[f32]>> $op<S> {
            $(#[$packed_doc])*
            pub fn from_packed(
                $geometry: $geometry_ty,
                $packed: S,
                $bias: Option<S>,
            ) -> Result<Self, Error> {
                $geometry.validate::<usize>()?;
                $check
                Ok(Self { geometry: $geometry, $field: $packed, bias: $bias })
            }
        }
    };
}

/// Writes the struct `$op` (fields `geometry`, `packed: S` and `bias: Option<S>`), `new`,
/// `from_slice` (feature `alloc`), `from_packed` and the accessors of an f32 operator whose
/// geometry packs PyTorch-layout weights into its GEMM layout (inherent `validate`,
/// `weight_len`, `packed_len`, `pack_weights`) and whose bias has `out_channels` values:
/// [`Conv1d`](super::conv::Conv1d) and [`Conv2d`](super::conv2d::Conv2d). `$name` is the
/// operator's name and `$weight_shape` the PyTorch weight shape, for the docs.
macro_rules! packed_conv {
    ($op:ident, $name:literal, $geometry:ident, $weight_shape:literal) => {
        #[doc = concat!("A prepared ", $name, ": weights packed for the GEMM once, at construction. See the")]
        #[doc = concat!("[module docs](self) for the computation and [`", stringify!($geometry), "`] for the shapes.")]
        ///
        /// `S` is the storage of the packed weights and of the bias: `Vec<f32>` (feature `alloc`),
        #[doc = concat!("`&'static [f32]` for data packed offline ([`", stringify!($op), "::from_packed`]), or any")]
        /// `AsRef<[f32]>`.
        #[derive(Clone, Debug)]
        pub struct $op<S> {
            geometry: $geometry,
            packed: S,
            bias: Option<S>,
        }

        weight_constructors! {
            $op, $geometry, Self::pack_to_vec;
            #[doc = concat!("Packs `weight` (`", $weight_shape, "`, PyTorch's layout) and")]
            /// takes `bias` (`[out_channels]`) by value.
            ///
            /// # Errors
            /// [`Error::Shape`] for an invalid geometry, [`Error::Length`] for a weight or bias
            /// of the wrong length.
            new;
            #[doc = concat!("As [`", stringify!($op), "::new`], copying the borrowed `bias`")]
            /// (the weights are packed into a new buffer either way).
            ///
            /// # Errors
            #[doc = concat!("As [`", stringify!($op), "::new`].")]
            from_slice;
            /// Wraps weights already packed by
            #[doc = concat!("[`", stringify!($geometry), "::pack_weights`] (e.g. offline, as")]
            /// `&'static` data) and `bias` (`[out_channels]`): no packing, no copy.
            ///
            /// # Errors
            /// [`Error::Shape`] for an invalid geometry, [`Error::Length`] when `packed` does
            #[doc = concat!("not have [`", stringify!($geometry), "::packed_len`] elements or")]
            /// `bias` is not `out_channels` long.
            from_packed(geometry, packed, bias) => {
                let expected = geometry.packed_len().unwrap_or(0);
                $crate::ops::check_len("packed weight", expected, packed.as_ref().len())?;
                $crate::ops::check_bias_len(bias.as_ref(), geometry.out_channels)?;
            } -> packed
        }

        #[cfg(feature = "alloc")]
        impl $op<Vec<f32>> {
            fn pack_to_vec(geometry: &$geometry, weight: &[f32]) -> Result<Vec<f32>, Error> {
                geometry.validate::<usize>()?;
                // Check the weight before allocating the packed buffer.
                let expected = geometry.weight_len().unwrap_or(0);
                if weight.len() != expected {
                    return Err(Error::Length { what: "weight", expected, got: weight.len() });
                }
                let mut packed = alloc::vec![0.0; geometry.packed_len().unwrap_or(0)];
                geometry.pack_weights(weight, &mut packed)?;
                Ok(packed)
            }
        }

        impl<S: AsRef<[f32]>> $op<S> {
            weight_accessors!(
                $geometry,
                packed: [f32],
                concat!("The packed weights ([`", stringify!($geometry), "::pack_weights`] layout)."),
                bias,
                "The bias, `[out_channels]`."
            );
        }
    };
}

/// Writes `run` and `run_in_place` of a shape-preserving unary operator (the elementwise
/// ones, activations, softmax): `run` validates the call
/// ([`check_unary`](super::check_unary): the shape rule, then the output's shape and
/// layout) and runs the `run` body; `run_in_place` runs the shape rule on the tensor's
/// shape and then its body. Each body is a statement on the parameters named in the call;
/// `$self` is the caller's `self` token (macro hygiene) and `B` the backend.
macro_rules! unary_runs {
    (
        $self:ident;
        $(#[$run_doc:meta])*
        run($input:ident, $output:ident) => $run:expr;
        $(#[$in_place_doc:meta])*
        run_in_place($x:ident) => $in_place:expr;
    ) => {
        $(#[$run_doc])*
        pub fn run<B: Backend>(
            &$self,
            $input: &TensorView<'_>,
            $output: &mut TensorViewMut<'_>,
        ) -> Result<(), Error> {
            $crate::ops::check_unary($self, $input, $output)?;
            $run;
            Ok(())
        }

        $(#[$in_place_doc])*
        pub fn run_in_place<B: Backend>(&$self, $x: &mut TensorViewMut<'_>) -> Result<(), Error> {
            $self.output_shape(&[*$x.shape()])?;
            $in_place;
            Ok(())
        }
    };
}

/// Writes an operator's serial entry point and the one that takes [`RunOptions`]
/// (`run` / `run_with`, `run_in_place` / `run_in_place_with`): the first calls the second
/// with `RunOptions::new()`; the second takes the same arguments and `$options` last, and
/// runs `$body`. `$self` is the caller's `self` token (macro hygiene) and `B` the backend.
///
/// [`RunOptions`]: super::RunOptions
macro_rules! with_run_options {
    (
        $self:ident;
        $(#[$doc:meta])*
        $run:ident($($arg:ident: $ty:ty),* $(,)?);
        $(#[$with_doc:meta])*
        $run_with:ident($options:ident) => $body:block
    ) => {
        $(#[$doc])*
        pub fn $run<B: Backend>(&$self, $($arg: $ty),*) -> Result<(), Error> {
            $self.$run_with::<B>($($arg,)* RunOptions::new())
        }

        $(#[$with_doc])*
        pub fn $run_with<B: Backend>(
            &$self,
            $($arg: $ty,)*
            $options: RunOptions<'_>,
        ) -> Result<(), Error> $body
    };
}

// The blocks (`crate::blocks`) write their runs with it too.
pub(crate) use with_run_options;
