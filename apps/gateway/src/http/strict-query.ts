/**
 * A query DTO whose parameters the validation pipe judges in URL order before class-validator: repeated
 * (InvalidFormat), unknown (UnknownField), unstorable text (InvalidFormat). Every list query is one (by
 * `PageQuery`); a query of a route that is not a collection extends it directly.
 */
export abstract class StrictQuery {}
